#!/usr/bin/env bash
# check-man.sh — the man pages against the programs they document (meson test --suite man).
#
# usage: check-man.sh --build-root DIR --bin-dir DIR... --page FILE...
#                     --program NAME PATH...
#
# Every page (built roff): lexgrog finds its whatis line, and man renders it without a
# warning. Every program: it has a page, and every long option its --help prints is set in
# bold in that page; a program whose usage line is "usage: NAME COMMAND ..." (odpemu-ctl)
# also has each command it lists in bold, and each command's --help checked the same way,
# with what that help lists in '  word  text' lines (inject's knobs) in bold too.
# Every file meson installs into a --bin-dir must be one of the programs, so a new
# executable cannot be installed without a page. The help text is the reference because it
# is what the code prints: a page cannot fall behind the option parser unnoticed.
set -uo pipefail

build_root="" bin_dirs=() pages=() prog_names=() prog_paths=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-root) build_root=$2; shift 2 ;;
    --bin-dir) bin_dirs+=("$2"); shift 2 ;;
    --page) pages+=("$2"); shift 2 ;;
    --program) prog_names+=("$2"); prog_paths+=("$3"); shift 3 ;;
    *) echo "check-man.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

for tool in lexgrog man python3; do
  command -v "$tool" >/dev/null ||
    { echo "check-man.sh: $tool is missing (apt-get install man-db python3)" >&2; exit 1; }
done

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# ---- each page renders cleanly and has a NAME line man's index can read
for page in "${pages[@]}"; do
  name=${page##*/}
  name=${name%.*}
  if ! whatis=$(lexgrog "$page" 2>&1) || [[ $whatis != *": \"$name - "* ]]; then
    fail "$page: lexgrog finds no whatis line '$name - ...': $whatis"
  fi
  warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
    man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "$page: man --warnings:"$'\n'"$warnings"
done

# page_of NAME: the built page of that name, any section.
page_of() {
  local p
  for p in "${pages[@]}"; do
    [[ ${p##*/} == "$1".[0-9] ]] && { echo "$p"; return 0; }
  done
  return 1
}

# in_bold PAGE WORD: the page sets WORD in bold (an option's or a command's own entry, not
# a mention in running text or an example).
in_bold() {
  grep -qE -- "\\\\fB$2([^a-z0-9-]|\$)" "$1"
}

# long_options: the --options in the help text on stdin, once each. Upper-case words
# (--KNOB) are placeholders, not options.
long_options() {
  grep -oE -- '--[a-z][a-z0-9]*(-[a-z0-9]+)*' | sort -u
}

# check_help NAME PAGE HELP-TEXT: every long option of the help is in the page.
check_help() {
  local name=$1 page=$2 help=$3 opt n=0
  while read -r opt; do
    [ -n "$opt" ] || continue
    n=$((n + 1))
    in_bold "$page" "$opt" || fail "$name: $opt (in its --help) is not documented in ${page##*/}"
  done < <(long_options <<<"$help")
  echo "$name: $n long options in --help, all in ${page##*/}"
}

# ---- each program: a page, and its options in it
for i in "${!prog_names[@]}"; do
  name=${prog_names[$i]} path=${prog_paths[$i]}
  if ! page=$(page_of "$name"); then
    fail "$name: no man page (docs/man/$name.N.scd, listed in docs/man/meson.build)"
    continue
  fi
  if ! help=$("$path" --help 2>&1); then
    fail "$name: '$path --help' failed:"$'\n'"$help"
    continue
  fi
  [ -n "$help" ] || { fail "$name: '$path --help' printed nothing"; continue; }
  check_help "$name" "$page" "$help"
  # A program whose first argument is a command: each listed command, and its own --help.
  if [[ $(head -n 1 <<<"$help") == "usage: $name COMMAND"* ]]; then
    while read -r cmd; do
      in_bold "$page" "$cmd" || fail "$name: command '$cmd' is not documented in ${page##*/}"
      if ! sub=$("$path" "$cmd" --help 2>&1); then
        fail "$name $cmd --help failed:"$'\n'"$sub"
        continue
      fi
      check_help "$name $cmd" "$page" "$sub"
      # What a command's help lists as '  word  text' (inject's knobs) is in bold too.
      while read -r entry; do
        in_bold "$page" "$entry" ||
          fail "$name $cmd: '$entry' (in its --help) is not documented in ${page##*/}"
      done < <(awk '/^  [a-z][a-z-]*  / { print $1 }' <<<"$sub")
    done < <(awk '/^  [a-z][a-z-]*  / { print $1 }' <<<"$help")
  fi
done

# ---- every installed executable is one of the programs above
installed=$(python3 - "$build_root/meson-info/intro-installed.json" "${bin_dirs[@]}" <<'EOF'
import json, os, sys
dirs = {os.path.normpath(d) for d in sys.argv[2:]}
for dest in json.load(open(sys.argv[1])).values():
    if os.path.dirname(os.path.normpath(dest)) in dirs:
        print(os.path.basename(dest))
EOF
) || fail "cannot read what meson installs ($build_root/meson-info/intro-installed.json)"
for exe in $installed; do
  known=false
  for name in "${prog_names[@]}"; do [ "$name" = "$exe" ] && known=true; done
  $known || fail "$exe is installed into ${bin_dirs[*]} but has no man page checked here" \
    "(add docs/man/$exe.N.scd and a --program entry in docs/man/meson.build)"
done

echo "${#pages[@]} pages, ${#prog_names[@]} programs, $(wc -w <<<"$installed") installed" \
  "executables checked; $failures failure(s)"
[ "$failures" -eq 0 ]
