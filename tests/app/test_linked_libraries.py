"""The logitscope binary does not link libcurl: http.cpp loads it with dlopen for `pull` only, so
that every other command runs without it and the ~25 libraries it needs (~3.8 MB resident in
`bench` on the 0.5B Q4_0 model, against a 1.10x memory bound). Reads the binary's DT_NEEDED
entries with readelf; a run of `pull` against the fake Hub (test_pull.py) checks the loading."""
import argparse
import subprocess
import sys


def needed(binary):
    out = subprocess.run(["readelf", "-d", binary], check=True, capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        if "(NEEDED)" in line:
            libs.append(line.split("[", 1)[1].split("]", 1)[0])
    return libs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    args = ap.parse_args()
    libs = needed(args.logitscope)
    # The reading itself must work: libc is always there.
    if "libc.so.6" not in libs:
        sys.exit(f"FAIL: readelf found no libc.so.6 among {libs}")
    linked = [lib for lib in libs if lib.startswith("libcurl")]
    if linked:
        sys.exit(f"FAIL: {args.logitscope} links {linked}; load it with dlopen (src/hub/http.cpp)")
    print(f"ok: {len(libs)} libraries, no libcurl: {' '.join(libs)}")


if __name__ == "__main__":
    main()
