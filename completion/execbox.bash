# bash completion for execbox(1). The subcommands are listed here; each
# one's options are read from its own `--help`, so they follow the binary.

# The options of one subcommand: every --word its help text mentions.
_execbox_options()
{
        { "$1" "$2" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*'; echo --help; } | sort -u
}

_execbox()
{
        local cur prev words cword split
        _init_completion -s || return

        local i cmd="" skip=0
        for ((i = 1; i < cword; i++)); do
                if ((skip)); then
                        skip=0
                        continue
                fi
                case ${words[i]} in
                --) [[ $cmd == run ]] && { _command_offset $((i + 1)); return; } ;;
                --*=*) ;;
                --timeout | --cpu-time | --memory | --pids | --cpus | --output-limit | --file-size | --disk | \
                --env | --cwd | --mount | --allow-mount | --cgroup | --listen | --state-dir | --token-file | \
                --pool | --max-sandboxes | --body-max | --upload-max | --allow-origin | --public-url | --sandbox-domain | --server | --token | --config | \
                --mcp-allowed-host | --mcp-pause-after | --drain-timeout)
                        skip=1 ;;
                -*) ;;
                *)
                        if [[ -z $cmd ]]; then
                                cmd=${words[i]}
                        elif [[ $cmd == run ]]; then
                                # `run` stops at its command (getopt's "+").
                                _command_offset $i
                                return
                        fi
                        ;;
                esac
        done

        if [[ -z $cmd ]]; then
                COMPREPLY=($(compgen -W 'run serve mcp version help --help --version' -- "$cur"))
                return
        fi
        case $cmd in
        run | serve | mcp) ;;
        *) return ;;
        esac

        case $prev in
        --state-dir | --allow-mount)
                _filedir -d
                return ;;
        --token-file | --config)
                _filedir
                return ;;
        --mount)
                # HOST:PATH[:ro|:rw]; the host directory comes first.
                _filedir -d
                return ;;
        --cgroup)
                COMPREPLY=($(compgen -W 'auto v1 v2' -- "$cur"))
                return ;;
        --timeout | --cpu-time | --memory | --pids | --cpus | --output-limit | --file-size | --disk | \
        --env | --cwd | --listen | --pool | --max-sandboxes | --body-max | --upload-max | --allow-origin | --public-url | --sandbox-domain | --server | --token | --config | \
        --mcp-allowed-host | --mcp-pause-after | --drain-timeout)
                return ;;
        esac
        $split && return

        if [[ $cur == -* || $cmd != run ]]; then
                COMPREPLY=($(compgen -W "$(_execbox_options "${words[0]}" "$cmd")" -- "$cur"))
                [[ ${COMPREPLY-} == *= ]] && compopt -o nospace
                return
        fi
        # run: an argument here is the command to run.
        COMPREPLY=($(compgen -W '--' -- "$cur"))
        [[ -z $cur ]] || _command_offset $cword
} &&
        complete -F _execbox execbox
