#!/bin/sh
# walj plugin launcher (the marketplace plugin ships no binary): runs the walj installed on
# this machine, found on PATH (this folder skipped) or in ~/.cargo/bin.
#
# `walj hook` (Claude Code's hooks) never blocks or fails a tool call: walj is exec'd (its hook
# exits 0 whatever happens), stdin passed through to it. Without walj, the hook reads its stdin and, at
# SessionStart only, tells the user how to install walj. No arguments and a stdin that is not
# a terminal is the hook too: a Claude Code older than 2.1.139 ignores the hook's `args`
# (exec form) and runs this file alone. Anything else (`walj recover`, …) runs walj, or says
# walj is missing and exits 127.
#
# Written by `walj plugin --launcher`; keep plugin/bin/walj and src/plugin/launcher.sh equal.

find_walj() {
    # A launcher run by a launcher (a copy of this file elsewhere on PATH): stop here.
    [ -n "${WALJ_PLUGIN_LAUNCHER:-}" ] && return 1
    set -f
    old_ifs=$IFS
    IFS=:
    for dir in ${PATH:-}; do
        [ -n "$dir" ] || continue
        if [ -f "$dir/walj" ] && [ -x "$dir/walj" ] && ! [ "$dir/walj" -ef "$0" ]; then
            IFS=$old_ifs
            set +f
            walj="$dir/walj"
            return 0
        fi
    done
    IFS=$old_ifs
    set +f
    for dir in "${CARGO_HOME:-${HOME:-}/.cargo}/bin" "${HOME:-}/.cargo/bin"; do
        if [ -f "$dir/walj" ] && [ -x "$dir/walj" ] && ! [ "$dir/walj" -ef "$0" ]; then
            walj="$dir/walj"
            return 0
        fi
    done
    return 1
}

if [ $# -eq 0 ] && ! [ -t 0 ]; then
    set -- hook
fi

if [ "${1:-}" = hook ]; then
    if find_walj; then
        # exec: no process stays between Claude Code and walj, so walj finds Claude Code itself
        # as the session's process (a child here would be recorded instead, and the session
        # read as crashed once this shell exits). `walj hook` exits 0 on every error, a panic too.
        WALJ_PLUGIN_LAUNCHER=1 exec "$walj" "$@"
    fi
    input=$(cat 2>/dev/null)
    case $input in
    *'"hook_event_name":"SessionStart"'* | *'"hook_event_name": "SessionStart"'*)
        printf '%s\n' '{"systemMessage":"walj: this session is NOT journaled: the walj plugin is installed but the walj binary is not (looked on PATH and in ~/.cargo/bin). Install it (`npm install -g walj`, `cargo install --path .` in a walj checkout, or copy a walj binary into a folder on PATH), then start a new session."}'
        ;;
    esac
    exit 0
fi

if find_walj; then
    # The plugin folder, for `walj doctor` (a `--plugin-dir` plugin leaves no other trace).
    WALJ_PLUGIN_LAUNCHER=1 WALJ_PLUGIN_ROOT="${0%/*}/.." exec "$walj" "$@"
fi
echo "walj: the walj binary is not installed (looked on PATH and in ~/.cargo/bin); install it with \`cargo install --path .\` in a walj checkout" >&2
exit 127
