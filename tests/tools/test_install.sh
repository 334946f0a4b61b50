#!/usr/bin/env bash
# install-tour: `meson install` gives a complete installation that runs where it lands.
# The build is installed into a staging directory (DESTDIR) and then moved to another
# directory (a relocated prefix); from there, with no build or source directory on any
# path and no LD_LIBRARY_PATH:
#  - every installed program starts (--help) and odpemu-run picks the drop-ins of its own
#    tree, before and after the move;
#  - no installed script or RUNPATH names the build or source directory;
#  - a program that includes odpemu's headers links against the installed libodpemu and
#    libodpemu-brick through their pkg-config files (pkg-config "--define-variable=prefix=$moved");
#  - every installed program and libodpemu have their man page, when the build made the
#    pages (docs/man: scdoc was there);
#  - odpemu-demo runs the whole tour on the installed programs (test_demo.sh's checks).
# usage: test_install.sh <meson build root> <source root> <prefix> <libdir>
set -uo pipefail
build=$1 src=$2 prefix=$3 libdir=$4
here=$(cd "$(dirname "$0")" && pwd)
stage=$(mktemp -d /tmp/odpemu-install-XXXXXX)
trap 'rm -rf "$stage"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
programs=(odpemud odpemu-ctl odpemu-perf odpemu-run odpemu-brick odpemu-brick-ctl
  odpemu-demo odpemu-gso-split odpemu-matrix)
clean_env=(env -i "PATH=/usr/sbin:/usr/bin:/sbin:/bin" "HOME=${HOME:-/tmp}")

# A build tree we cannot write (tools/test --profile user: root's build, the tests run as
# another user): meson install writes its log there, so install from a shadow tree whose
# entries link to the build's, with its own meson-private and meson-logs.
install_root=$build
if [ ! -w "$build/meson-logs" ]; then
  install_root="$stage.shadow"
  mkdir -p "$install_root/meson-logs"
  for e in "$build"/*; do
    case ${e##*/} in
      meson-logs) ;;
      meson-private) cp -r "$e" "$install_root/" ;;
      *) ln -s "$e" "$install_root/${e##*/}" ;;
    esac
  done
  trap 'rm -rf "$stage" "$stage.shadow"' EXIT
fi
if ! meson install -C "$install_root" --destdir "$stage" --no-rebuild >"$stage.log" 2>&1; then
  cat "$stage.log"; rm -f "$stage.log"
  echo "install-tour: meson install failed"; exit 1
fi
rm -f "$stage.log"

# check_tree <installed prefix>: the programs start; odpemu-run finds this tree's drop-ins.
check_tree() {
  local root=$1 p got
  for p in "${programs[@]}"; do
    if [ ! -x "$root/bin/$p" ]; then fail "$p is not installed in $root/bin"; continue; fi
    "${clean_env[@]}" "$root/bin/$p" --help >/dev/null 2>&1 || fail "$root/bin/$p --help failed"
  done
  got=$("${clean_env[@]}" "$root/bin/odpemu-run" printenv LD_LIBRARY_PATH)
  [ "$got" = "$(cd "$root/$libdir/odpemu" && pwd)" ] ||
    fail "odpemu-run in $root uses '$got', want $root/$libdir/odpemu"
}

staged=$stage$prefix
check_tree "$staged"

# Nothing installed may point into the build or source tree.
while IFS= read -r f; do
  if file -b "$f" | grep -q '^ELF'; then
    rp=$(readelf -d "$f" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
    case $rp in ''|'$ORIGIN'/*) ;; *) fail "${f#"$staged"/} has RUNPATH '$rp'" ;; esac
  elif grep -Iq -e "$build" -e "$src" "$f"; then
    fail "${f#"$staged"/} names the build or source directory"
  fi
done < <(find "$staged" -type f)

moved=$stage/moved
mv "$staged" "$moved" || { echo "install-tour: cannot move $staged"; exit 1; }
check_tree "$moved"

# A client of the headers and pkg-config files, built against the moved tree only.
cat >"$stage/client.c" <<'EOF'
#include <odpemu/odpemu.h>
#include <odpemu/brick.h>
#include <stdio.h>
int main(void)
{
	int n = 0;
	struct odpemu_device **list = odpemu_get_device_list(&n);

	if (list)
		odpemu_free_device_list(list);
	printf("%d %p\n", n, (void *)brick_close);
	return 0;
}
EOF
pc=("${clean_env[@]}" "PKG_CONFIG_PATH=$moved/$libdir/pkgconfig" pkg-config "--define-variable=prefix=$moved")
if flags=$("${pc[@]}" --cflags --libs libodpemu libodpemu-brick 2>&1); then
  # shellcheck disable=SC2086
  if "${clean_env[@]}" cc -Wall -Werror -o "$stage/client" "$stage/client.c" $flags >"$stage/cc.log" 2>&1; then
    "${clean_env[@]}" "LD_LIBRARY_PATH=$moved/$libdir" "$stage/client" >/dev/null ||
      fail "a program linked against the installed libodpemu does not run"
  else
    fail "a program using odpemu.h and brick.h does not build: $(cat "$stage/cc.log")"
  fi
else
  fail "pkg-config libodpemu libodpemu-brick: $flags"
fi

if compgen -G "$build/docs/man/*.[138]" >/dev/null; then
  for p in odpemud.8 odpemu-ctl.8 odpemu-perf.1 odpemu-run.1 odpemu-brick.8 \
           odpemu-brick-ctl.1 odpemu-demo.1 libodpemu.3; do
    [ -f "$moved/share/man/man${p##*.}/$p" ] || fail "man page $p is not installed"
  done
fi

# The tour, on the installed programs alone.
"${clean_env[@]}" bash "$here/test_demo.sh" "$moved/bin/odpemu-demo" || fail "odpemu-demo's tour"

if [ "$failures" -gt 0 ]; then
  echo "install-tour: $failures failed"
  exit 1
fi
echo "install-tour: OK (installed to $prefix under DESTDIR, moved, toured)"
