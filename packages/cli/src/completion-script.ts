import type { Command } from 'commander';

/** Every command path with what may follow it: its subcommands and options. */
function paths(cmd: Command, prefix: string[] = []): Array<{ path: string[]; words: string[] }> {
  const words = [...cmd.commands.map((c) => c.name()), ...cmd.options.flatMap((o) => [o.long, o.short].filter((x): x is string => Boolean(x))), '--help'];
  return [{ path: prefix, words }, ...cmd.commands.flatMap((c) => paths(c, [...prefix, c.name()]))];
}

/**
 * A completion script for bash or zsh (through bashcompinit), made from the command tree itself so
 * it never falls behind: `source <(aex completion bash)`.
 */
export function completionScript(program: Command, shell: 'bash' | 'zsh'): string {
  const cases = paths(program)
    .map(({ path, words }) => `    "${path.join(' ')}") words="${words.join(' ')}" ;;`)
    .join('\n');
  const bash = `# aex completion (bash): source <(aex completion bash)
_aex_complete() {
  local cur path word words i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  path=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    case "$word" in -*) continue ;; esac
    case " $(_aex_words "$path") " in *" $word "*) path="\${path:+$path }$word" ;; esac
  done
  COMPREPLY=( $(compgen -W "$(_aex_words "$path")" -- "$cur") )
}
_aex_words() {
  local words=""
  case "$1" in
${cases}
  esac
  echo "$words"
}
complete -F _aex_complete aex
`;
  return shell === 'bash' ? bash : `# aex completion (zsh): source <(aex completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash.split('\n').slice(1).join('\n')}`;
}
