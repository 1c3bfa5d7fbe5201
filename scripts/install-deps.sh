#!/bin/sh
# Installs the Debian packages frae builds, tests and benchmarks with.
# Idempotent: packages already present are skipped, and apt is only
# touched when something is missing.
set -eu

# build + test: compiler, make, sanitizer runtimes come with gcc.
# tests: python3-numpy builds .npy/.npz inputs and a reference forward;
# pkgconf checks the installed library; clang + libclang-rt-14-dev build
# the libFuzzer target; clang-format checks the C style (.clang-format).  Speech: libsndfile, FFTW and libsamplerate for the
# audio front end; espeak-ng and flite make the corpus; codec2 and
# opus-tools are the demo's reference codecs; sox converts for them;
# matplotlib draws the demo's figures; python3-aubio is the demo's reference
# pitch tracker (not linked: frae has its own).  python3-dev builds the
# Python module (import frae), python3-pytest tests it, python3-venv,
# -pip, -setuptools and -wheel install it the Python way ('pip install .'
# into a venv, offline: tests/pip_install_test.sh); libzip reads .npz
# files (stored or compressed members, zip64); chromium renders the demo's
# listening page headless, in its test and at the end of the demo.
# fillets-ng-data-cs and -nl: recorded human speech (the voice-acted
# dialogs of Fish Fillets, GPL-2) for scripts/make-corpus.sh --human and
# its test.
# reference fixtures / bench: python3-torch (optional at
# test time: fixtures are committed, so tests never need torch).
BUILD_PKGS="gcc make libc6-dev python3 python3-numpy pkgconf clang libclang-rt-14-dev
  clang-format
  python3-dev python3-pytest libzip-dev chromium
  python3-venv python3-pip python3-setuptools python3-wheel
  libsndfile1-dev libfftw3-dev libsamplerate0-dev
  espeak-ng flite codec2 opus-tools sox python3-matplotlib python3-aubio
  fillets-ng-data-cs fillets-ng-data-nl"
OPTIONAL_PKGS="${FRAE_OPTIONAL_PKGS-python3-numpy python3-torch libopenblas-dev hyperfine valgrind}"
# data-parallel training over MPI (frae-mpi, README "Training on a
# cluster"): Open MPI, with WITH_MPI=1 (CI installs it; nothing else needs it)
MPI_PKGS="openmpi-bin libopenmpi-dev"
# recorded voices of many speakers and languages for make-corpus.sh --voices
# (issue 48; docs/2026-12-04-voices.md: each source's licence, speakers and
# hours), with WITH_VOICES=1: about 420 MB of downloads, not needed by the
# tests or the shipped models.  KDE's letters and words read aloud
# (klettres-data, ktuberling-data, GPL-2+), Asterisk's telephone prompts
# (CC-BY-SA-3.0, CC-BY-3.0, GPL-2, BSD-style), Fish Fillets' English
# dialogs (fillets-ng-data, GPL-2), CMU's test recordings
# (pocketsphinx-testdata, BSD-2) and Warzone 2100's voices (GPL-2+)
VOICE_PKGS="klettres-data ktuberling-data fillets-ng-data pocketsphinx-testdata
  warzone2100-data asterisk-core-sounds-en-wav asterisk-core-sounds-es-wav
  asterisk-core-sounds-fr-wav asterisk-core-sounds-it-wav asterisk-core-sounds-ru-wav
  asterisk-prompt-es-co asterisk-prompt-fr-armelle asterisk-prompt-it-menardi-wav"

# the 64-bit ARM build and its tests under emulation, with WITH_ARM=1
# (make CROSS=aarch64-linux-gnu-, make test-aarch64): Debian's cross
# compiler, qemu-user, and the arm64 builds of the libraries frae links
# (multiarch: the arm64 architecture is added to dpkg first)
ARM_PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  libzip-dev:arm64 libsndfile1-dev:arm64 libfftw3-dev:arm64
  libsamplerate0-dev:arm64"

missing=""
for p in $BUILD_PKGS ${WITH_OPTIONAL:+$OPTIONAL_PKGS} ${WITH_MPI:+$MPI_PKGS} \
         ${WITH_ARM:+$ARM_PKGS} ${WITH_VOICES:+$VOICE_PKGS}; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "frae: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if [ -n "${WITH_ARM:-}" ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
