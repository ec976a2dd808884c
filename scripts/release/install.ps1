# walj installer for Windows: fetches walj.exe from a walj release, checks its SHA-256 against
# the release's SHA256SUMS, and installs it as <Prefix>\bin\walj.exe (default
# %LOCALAPPDATA%\walj), adding that folder to the user's PATH.
#
#   powershell -ExecutionPolicy Bypass -File install.ps1 [-From URL|DIR] [-Prefix DIR]
#
# The copy attached to a release has that release's address built in; the copy in the
# repository has none and needs -From. Nothing is installed unless the checksum matches.
param(
    [string]$From = "",
    [string]$Prefix = (Join-Path $env:LOCALAPPDATA "walj")
)
$ErrorActionPreference = "Stop"

# Filled in by the release workflow for the copy it attaches to a release.
$WaljReleaseBase = ""

if ($From -eq "") { $From = $WaljReleaseBase }
if ($From -eq "") { throw "walj install: no release to install from: give -From URL or -From DIR" }
if ($From -match '^http://') { throw "walj install: refused: $From is not https" }

$arch = $env:PROCESSOR_ARCHITECTURE
if ($arch -ne "AMD64") { throw "walj install: no walj release build for $arch; build from source: cargo install --path . in a walj checkout" }
$target = "x86_64-pc-windows-msvc"

$tmp = Join-Path ([System.IO.Path]::GetTempPath()) ("walj-install-" + [guid]::NewGuid())
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
    function Fetch([string]$name) {
        $dest = Join-Path $tmp $name
        if ($From -match '^https://') {
            Invoke-WebRequest -UseBasicParsing -Uri "$From/$name" -OutFile $dest
        } else {
            Copy-Item -LiteralPath (Join-Path $From $name) -Destination $dest
        }
        return $dest
    }
    $sums = Get-Content (Fetch "SHA256SUMS")
    $line = $sums | Where-Object { $_ -match "^[0-9a-f]{64}  walj-[0-9A-Za-z.+-]+-$target\.zip$" } | Select-Object -First 1
    if (-not $line) { throw "walj install: the release has no walj build for $target" }
    $want = $line.Substring(0, 64)
    $name = $line.Substring(66)
    $zip = Fetch $name
    $got = (Get-FileHash -Algorithm SHA256 -LiteralPath $zip).Hash.ToLower()
    if ($got -ne $want) { throw "walj install: refused: $name's SHA-256 is $got, the release's SHA256SUMS says $want; nothing was installed" }
    Expand-Archive -LiteralPath $zip -DestinationPath (Join-Path $tmp "x")
    $exe = Join-Path (Join-Path (Join-Path $tmp "x") ($name -replace '\.zip$', '')) "walj.exe"
    if (-not (Test-Path -LiteralPath $exe)) { throw "walj install: $name holds no walj.exe" }
    $bin = Join-Path $Prefix "bin"
    New-Item -ItemType Directory -Force -Path $bin | Out-Null
    Copy-Item -LiteralPath $exe -Destination (Join-Path $bin "walj.exe") -Force
    $userPath = [Environment]::GetEnvironmentVariable("Path", "User")
    if (-not (($userPath -split ';') -contains $bin)) {
        $newPath = if ([string]::IsNullOrEmpty($userPath)) { $bin } else { "$userPath;$bin" }
        [Environment]::SetEnvironmentVariable("Path", $newPath, "User")
        Write-Output "walj: added $bin to your user PATH (new terminals see it)"
    }
    Write-Output "walj: installed $(& (Join-Path $bin 'walj.exe') --version) as $(Join-Path $bin 'walj.exe')"
} finally {
    Remove-Item -Recurse -Force -LiteralPath $tmp -ErrorAction SilentlyContinue
}
