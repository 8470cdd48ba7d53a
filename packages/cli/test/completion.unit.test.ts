import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';

describe('completion', () => {
  cliTest('the bash script knows every command, and each group\'s subcommands and options', async ({ aex }) => {
    const r = await aex(['completion', 'bash']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^# aex completion \(bash\): source <\(aex completion bash\)\n/);
    expect(r.stdout).toContain('    "") words="signup login profiles keys agents delegation wallet services discover buy transactions deliver verify approvals disputes session receipt listen console did completion --version -V --profile --url --json --signature-scheme --help" ;;\n');
    expect(r.stdout).toContain('    "wallet") words="balance fund withdraw ledger --help" ;;\n');
    expect(r.stdout).toContain('    "session") words="open call close show list --help" ;;\n');
    expect(r.stdout).toContain('    "wallet ledger") words="--agent --limit --help" ;;\n');
    expect(r.stdout).toMatch(/\ncomplete -F _aex_complete aex\n$/);
  });

  cliTest('the zsh script loads bashcompinit before the same completion', async ({ aex }) => {
    const bash = (await aex(['completion', 'bash'])).stdout;
    const zsh = (await aex(['completion', 'zsh'])).stdout;
    expect(zsh).toBe(`# aex completion (zsh): source <(aex completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash.split('\n').slice(1).join('\n')}`);
  });

  cliTest('the bash script completes a subcommand in bash', async ({ aex, dir }) => {
    const script = join(dir, 'aex.bash');
    writeFileSync(script, (await aex(['completion', 'bash'])).stdout);
    const line = `source ${script}; COMP_WORDS=(aex disputes res); COMP_CWORD=2; _aex_complete; echo "\${COMPREPLY[*]}"`;
    const completed = await new Promise<string>((resolve, reject) => execFile('bash', ['-c', line], (err, stdout) => (err ? reject(err) : resolve(stdout.trim()))));
    expect(completed).toBe('respond');
  });

  cliTest('a shell other than bash or zsh is refused', async ({ aex }) => {
    const r = await aex(['completion', 'fish']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("error: command-argument value 'fish' is invalid for argument 'shell'. Allowed choices are bash, zsh.")]);
  });
});
