/* claude.exe for scripts/test-windows.sh: stands in for Claude Code as the parent of walj's hook,
 * so walj's Windows liveness (ToolHelp ancestry, the process's creation time) is exercised.
 *   claude.exe WALJ_EXE PAYLOAD_FILE HOLD_MS
 * runs `WALJ_EXE hook` with PAYLOAD_FILE on its stdin, waits for it, stays alive HOLD_MS more,
 * and exits with the hook's exit code. */
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

int wmain(int argc, wchar_t **argv) {
    if (argc != 4) { fwprintf(stderr, L"usage: claude.exe WALJ_EXE PAYLOAD_FILE HOLD_MS\n"); return 2; }
    SECURITY_ATTRIBUTES sa = { sizeof sa, NULL, TRUE };
    HANDLE in = CreateFileW(argv[2], GENERIC_READ, FILE_SHARE_READ, &sa, OPEN_EXISTING, 0, NULL);
    if (in == INVALID_HANDLE_VALUE) { fwprintf(stderr, L"cannot open %ls\n", argv[2]); return 2; }
    wchar_t cmd[4096];
    _snwprintf(cmd, 4096, L"\"%ls\" hook", argv[1]);
    STARTUPINFOW si = { sizeof si };
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = in;
    si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    PROCESS_INFORMATION pi;
    if (!CreateProcessW(NULL, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
        fwprintf(stderr, L"cannot start %ls: %lu\n", argv[1], GetLastError());
        return 2;
    }
    WaitForSingleObject(pi.hProcess, INFINITE);
    DWORD code = 1;
    GetExitCodeProcess(pi.hProcess, &code);
    Sleep((DWORD)_wtoi(argv[3]));
    return (int)code;
}
