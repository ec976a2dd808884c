#!/bin/sh
# walj plugin launcher: runs the walj binary the plugin brings, or the walj installed on this
# machine. In order: the binary bundled for this platform beside this file
# (`bin/platforms/<os>-<cpu>/walj`, put there by `scripts/plugin-pack.sh`, which the release
# workflow runs), then walj on PATH (this folder skipped), then ~/.cargo/bin. The plugin
# committed in walj's repository bundles no binary (a repository does not carry binaries).
#
# `walj hook` (Claude Code's hooks) never blocks or fails a tool call: walj is exec'd (its hook
# exits 0 whatever happens), stdin passed through to it. Without walj, the hook reads its stdin and, at
# SessionStart only, tells the user how to install walj. No arguments and a stdin that is not
# a terminal is the hook too: a Claude Code older than 2.1.139 ignores the hook's `args`
# (exec form) and runs this file alone. Anything else (`walj recover`, …) runs walj, or says
# walj is missing and exits 127.
#
# Written by `walj plugin --launcher`; keep plugin/bin/walj and src/plugin/launcher.sh equal.

# This machine's platform, in npm's names (the release's names): linux-x64, darwin-arm64, ...
platform() {
    case $(uname -s 2>/dev/null) in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    FreeBSD) os=freebsd ;;
    *) return 1 ;;
    esac
    case $(uname -m 2>/dev/null) in
    x86_64 | amd64) cpu=x64 ;;
    aarch64 | arm64) cpu=arm64 ;;
    *) return 1 ;;
    esac
    echo "$os-$cpu"
}

find_walj() {
    # A launcher run by a launcher (a copy of this file elsewhere on PATH): stop here.
    [ -n "${WALJ_PLUGIN_LAUNCHER:-}" ] && return 1
    # The binary this plugin brings for this platform.
    if plat=$(platform); then
        bundled="${0%/*}/platforms/$plat/walj"
        if [ -f "$bundled" ] && [ -x "$bundled" ]; then
            walj=$bundled
            return 0
        fi
    fi
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
        printf '%s\n' '{"systemMessage":"walj: this session is NOT journaled: the walj plugin is installed but no walj binary was found (none bundled for this platform, none on PATH or in ~/.cargo/bin). Build it from a walj checkout with `cargo install --path .` (or copy a walj binary into a folder on PATH), then start a new session; `walj doctor` then checks the install."}'
        ;;
    esac
    exit 0
fi

if find_walj; then
    # The plugin folder, for `walj doctor` (a `--plugin-dir` plugin leaves no other trace).
    WALJ_PLUGIN_LAUNCHER=1 WALJ_PLUGIN_ROOT="${0%/*}/.." exec "$walj" "$@"
fi
echo "walj: the walj binary is not installed (none bundled with this plugin for this platform, none on PATH or in ~/.cargo/bin); install it with \`cargo install --path .\` in a walj checkout" >&2
exit 127
