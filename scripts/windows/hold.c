/* hold.exe for scripts/test-windows.sh: holds FILE open as an editor or a virus scanner might,
 * sharing read only (no FILE_SHARE_WRITE, no FILE_SHARE_DELETE: Windows then refuses to replace,
 * rename or delete it), prints "held" and waits until its stdin closes.
 *   hold.exe FILE */
#include <windows.h>
#include <stdio.h>

int wmain(int argc, wchar_t **argv) {
    if (argc != 2) { fwprintf(stderr, L"usage: hold.exe FILE\n"); return 2; }
    HANDLE h = CreateFileW(argv[1], GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, 0, NULL);
    if (h == INVALID_HANDLE_VALUE) { fwprintf(stderr, L"cannot open %ls: %lu\n", argv[1], GetLastError()); return 2; }
    printf("held\n");
    fflush(stdout);
    char buf[64];
    DWORD n;
    while (ReadFile(GetStdHandle(STD_INPUT_HANDLE), buf, sizeof buf, &n, NULL) && n > 0) {}
    CloseHandle(h);
    return 0;
}
