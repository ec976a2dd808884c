/* A stand-in for Windows' bcryptprimitives.dll under Wine before 8.13, which lacks it: Rust's
 * standard library for Windows asks it for random bytes (ProcessPrng). This one answers with
 * RtlGenRandom (advapi32's SystemFunction036), which every Wine has. Used only by
 * scripts/test-windows.sh, and only when the Wine it finds is older than 8.13. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
