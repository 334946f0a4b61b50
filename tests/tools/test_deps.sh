#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2034  # check's conditions are eval'ed later, with $out set
# tools/ci/deps.sh on a distribution without apt (meson test deps-no-apt): with rpm, the
# dnf line names the missing Fedora/RHEL packages (tools/dependencies.txt's rpm: column)
# and a missing required one stops the run; with neither apt nor rpm, both names are
# printed and the run goes on. A PATH of a few tools stands in for such a system.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

for t in bash awk grep tr sed cat dirname; do ln -s "$(command -v "$t")" "$fake/$t"; done
run() { env -i PATH="$fake" bash -c "source '$top/tools/ci/deps.sh'; odpemu_ensure_deps" 2>&1; }

# rpm with only gcc and meson installed
printf '#!/bin/sh\ncase "$3" in gcc|meson) exit 0 ;; esac\nexit 1\n' > "$fake/rpm"
chmod +x "$fake/rpm"
out=$(run); rc=$?
check "rpm: a required package missing stops (exit $rc)" '[ "$rc" -ne 0 ]'
check "rpm: the dnf line" 'grep -q "^  dnf install -y .*liburing-devel" <<< "$out"'
check "rpm: Fedora names, not Debian's" \
  'grep -q "isa-l-devel" <<< "$out" && ! grep -q "libisal-dev" <<< "$out"'
check "rpm: installed ones not asked for" '! grep -qw "gcc" <<< "$(grep "dnf install" <<< "$out")"'
check "rpm: libnl3-devel once for two Debian packages" \
  '[ "$(grep "dnf install" <<< "$out" | grep -o "libnl3-devel" | wc -l)" -eq 1 ]'
check "rpm: nothing Debian-only (rpm:-)" '! grep -qE "dpkg-dev|lintian|debhelper" <<< "$out"'

# rpm with everything installed: nothing printed, go on
printf '#!/bin/sh\nexit 0\n' > "$fake/rpm"
out=$(run); rc=$?
check "rpm: all installed, exit 0 and silent (exit $rc)" '[ "$rc" -eq 0 ] && [ -z "$out" ]'

# neither apt nor rpm
rm "$fake/rpm"
out=$(run); rc=$?
check "no apt or rpm: go on (exit $rc)" '[ "$rc" -eq 0 ]'
check "no apt or rpm: both names" \
  'grep -q "libisal-dev" <<< "$out" && grep -q "isa-l-devel" <<< "$out"'
[ "$fails" -eq 0 ] && echo "deps-no-apt: all checks passed"
exit $((fails > 0))
