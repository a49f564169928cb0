# bash completion for bpu-lint. It reads the options from `bpu-lint [SUBCOMMAND] --help`
# and the platforms and rule ids from the binary itself when Tab is pressed (a few
# milliseconds), so it never goes stale against the version installed.
_bpu_lint() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local exe=${COMP_WORDS[0]} sub="" w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    case $w in rules | explain | platforms | compare | calibrate) sub=$w; break ;; esac
  done
  local help
  help=$("$exe" $sub --help 2>/dev/null) || return 0
  case $prev in
    -p | --platform)
      COMPREPLY=($(compgen -W "$("$exe" platforms 2>/dev/null | awk '/^[^ ]/ {print $1}')" -- "$cur"))
      return 0 ;;
    --select | --ignore)
      COMPREPLY=($(compgen -W "$("$exe" rules 2>/dev/null | awk '$1 ~ /^BPU[0-9]+$/ {print $1}')" -- "$cur"))
      return 0 ;;
    -o | --output | --fixed-model | --pytorch-snippet | --config | --hb-config | --baseline | --write-baseline | --rules)
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0 ;;
    --rules-dir | --source-root)
      COMPREPLY=($(compgen -d -- "$cur"))
      return 0 ;;
  esac
  # An option whose help lists its values: "--format TEXT:{text,concise,json}".
  if [[ $prev == -* ]]; then
    local choices
    choices=$(sed -n "s/^ *\(-[A-Za-z], *\)\{0,1\}${prev}[ ,][^{]*{\([^}]*\)}.*/\2/p" <<<"$help" | head -n 1)
    if [[ -n $choices ]]; then
      COMPREPLY=($(compgen -W "${choices//,/ }" -- "$cur"))
      return 0
    fi
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(grep -oE '(^|[ ,])--?[A-Za-z][-A-Za-z0-9]*' <<<"$help" | tr -d ' ,' | sort -u)" -- "$cur"))
    return 0
  fi
  case $sub in
    "") COMPREPLY=($(compgen -W "rules explain platforms compare calibrate" -- "$cur")) ;;
    explain) COMPREPLY=($(compgen -W "$("$exe" rules 2>/dev/null | awk '$1 ~ /^BPU[0-9]+$/ {print $1}')" -- "$cur")) ;;
    *) ;;
  esac
  # Models: *.onnx files and folders (folders are searched for *.onnx); logs for compare and calibrate.
  if [[ -z $sub || $sub == compare || $sub == calibrate ]]; then
    local IFS=$'\n'
    COMPREPLY+=($(compgen -d -- "$cur"))
    if [[ $sub == compare || $sub == calibrate ]]; then COMPREPLY+=($(compgen -f -- "$cur")); else COMPREPLY+=($(compgen -f -X '!*.[oO][nN][nN][xX]' -- "$cur")); fi
  fi
  return 0
}
complete -o filenames -F _bpu_lint bpu-lint
