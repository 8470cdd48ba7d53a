import { Command } from 'commander';
import { completionScript } from '../completion-script.js';
import type { Context } from '../context.js';

/** `aex completion bash|zsh`: a completion script made from the whole program's command tree. */
export function registerCompletionCommand(program: Command, ctx: Context): void {
  program
    .command('completion')
    .description('print a shell completion script: source <(aex completion bash)')
    .addArgument(new Command().createArgument('<shell>', 'bash or zsh').choices(['bash', 'zsh']))
    .action((shell: 'bash' | 'zsh') => ctx.io.out(completionScript(program, shell)));
}
