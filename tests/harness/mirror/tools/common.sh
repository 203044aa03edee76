# Common part of the fixture tools (inlined by build_mirror.py where @COMMON@ stands).
# The profile names which real capture to print: first line of /etc/gpulab-fixture/profile, or of the file
# that GPULAB_FIXTURE_PROFILE_FILE names; no file means "no-gpu".
self=$(readlink -f "$0" 2>/dev/null || echo "$0")
fixdir=$(dirname "$self")/../share/gpulab-fixture
[ -d "$fixdir" ] || fixdir=@PREFIX@/share/gpulab-fixture
pfile=${GPULAB_FIXTURE_PROFILE_FILE:-/etc/gpulab-fixture/profile}
profile=no-gpu
if [ -r "$pfile" ]; then
    profile=$(head -n 1 "$pfile" | tr -d '[:space:]')
    [ -n "$profile" ] || profile=no-gpu
fi
if [ ! -d "$fixdir/$profile" ]; then
    echo "$TOOL: gpulab.rocm fixture: unknown profile '$profile' (read from $pfile)." \
        "Known profiles: $(ls "$fixdir" | tr '\n' ' ')" >&2
    exit 2
fi
# A profile with no amd-smi capture (none of an MI250X exists; every Core SDK release installs amd-smi): amd-smi
# prints what it prints on a host where it reaches no GPU, which is what the test containers are (no amdgpu, no
# /dev/kfd). rocminfo and rocm-smi keep saying "no capture": a profile is chosen for its rocminfo.
[ -n "$(ls "$fixdir/$profile/$TOOL" 2>/dev/null)" ] || [ "$TOOL" != amd-smi ] || profile=no-gpu
if [ ! -d "$fixdir/$profile/$TOOL" ]; then
    echo "$TOOL: gpulab.rocm fixture: profile '$profile' has no capture of $TOOL." >&2
    exit 2
fi

# emit KEY...: print the first capture found among KEY... (then "any") on the stream it was recorded on,
# and exit with its recorded exit code.
emit() {
    for key in "$@" any; do
        capture=$fixdir/$profile/$TOOL/$key
        [ -f "$capture" ] || continue
        rc=0
        [ -f "$capture.rc" ] && rc=$(cat "$capture.rc")
        if [ "$(cat "$capture.fd" 2>/dev/null)" = 2 ]; then cat "$capture" >&2; else cat "$capture"; fi
        exit "$rc"
    done
    captures=$(ls "$fixdir/$profile/$TOOL" | grep -v -e '\.rc$' -e '\.fd$' | tr '\n' ' ')
    echo "$TOOL: gpulab.rocm fixture: profile '$profile' has no capture for this command (looked for: $*)." \
        "Its $TOOL captures: ${captures:-none}" >&2
    exit 2
}
