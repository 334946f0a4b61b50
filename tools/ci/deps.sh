# shellcheck shell=bash
# Sourced by tools/test and tools/demo: install what tools/dependencies.txt lists.
# As root: apt-get installs whatever is missing. Otherwise: print the exact apt-get line
# and stop, unless only optional ([ci]) packages are missing. Without apt (dpkg-query):
# with rpm, print the dnf line of the missing Fedora/RHEL packages (the rpm: column) and
# stop if a required one is missing; with neither, print both names and go on (meson then
# says which library it cannot find).

odpemu_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# packages_from <filter>: "all", "required" (no [ci] tag) or "optional" ([ci] tag).
odpemu_packages() {
  local filter=$1
  grep -v '^[[:space:]]*#' "$odpemu_top/tools/dependencies.txt" | while read -r pkg rest; do
    [ -n "$pkg" ] || continue
    case "$filter:$rest" in
      required:*'[ci]'*|optional:) ;;
      optional:*'[ci]'*|all:*|required:*) echo "$pkg" ;;
    esac
  done
}

# odpemu_rpm_packages <filter>: the Fedora/RHEL names of odpemu_packages' lines, once each.
odpemu_rpm_packages() {
  local filter=$1
  grep -v '^[[:space:]]*#' "$odpemu_top/tools/dependencies.txt" | while read -r pkg rpm rest; do
    [ -n "$pkg" ] || continue
    rpm=${rpm#rpm:}
    [ "$rpm" = - ] && continue
    case "$filter:$rest" in
      required:*'[ci]'*|optional:) ;;
      optional:*'[ci]'*|all:*|required:*) echo "$rpm" ;;
    esac
  done | awk '!seen[$0]++'
}

# odpemu_no_apt: the dependency check of a distribution without apt.
odpemu_no_apt() {
  local p missing="" required=""
  if ! command -v rpm >/dev/null; then
    echo "odpemu: no apt or rpm here: install the equivalents of these Debian packages:" >&2
    echo "  $(odpemu_packages required | tr '\n' ' ')" >&2
    echo "  (Fedora/RHEL names: $(odpemu_rpm_packages required | tr '\n' ' '))" >&2
    return 0
  fi
  for p in $(odpemu_rpm_packages all); do rpm -q --quiet "$p" || missing+="$p "; done
  for p in $(odpemu_rpm_packages required); do rpm -q --quiet "$p" || required+="$p "; done
  [ -z "$missing" ] && return 0
  odpemu_say_missing "no apt here; missing Fedora/RHEL packages (RHEL 9: EPEL and CRB enabled):" \
    "dnf install -y $missing" "$required"
}

# odpemu_say_missing <what> <install line> <required missing>: say what to run; 1 when a
# required package is missing (the run cannot go on), else 0.
odpemu_say_missing() {
  echo "odpemu: $1" >&2
  echo "  $2" >&2
  if [ -n "${3// /}" ]; then
    echo "odpemu: cannot continue without: $3" >&2
    return 1
  fi
  echo "odpemu: continuing without the optional ones (fuzzing/CI extras are skipped)" >&2
}

odpemu_missing() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
      || echo "$pkg"
  done
}

odpemu_ensure_deps() {
  local missing
  command -v dpkg-query >/dev/null || { odpemu_no_apt; return; }
  # shellcheck disable=SC2046
  missing=$(odpemu_missing $(odpemu_packages all) | tr '\n' ' ')
  [ -z "${missing// /}" ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "odpemu: installing missing Debian packages: $missing"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null \
      || { echo "odpemu: apt-get install failed for: $missing" >&2; return 1; }
    return 0
  fi
  local required
  # shellcheck disable=SC2046  # one word per package
  required=$(odpemu_missing $(odpemu_packages required) | tr '\n' ' ')
  odpemu_say_missing "missing Debian packages. Run as root:" "apt-get install -y $missing" \
    "$required"
}
