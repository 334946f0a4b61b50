# shellcheck shell=bash
# Sourced by tools/test and tools/demo: install what tools/dependencies.txt lists.
# As root: apt-get installs whatever is missing. Otherwise: print the exact apt-get line
# and stop, unless only optional ([ci]) packages are missing.

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

odpemu_missing() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
      || echo "$pkg"
  done
}

odpemu_ensure_deps() {
  local missing
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
  # shellcheck disable=SC2046
  local required
  required=$(odpemu_missing $(odpemu_packages required) | tr '\n' ' ')
  echo "odpemu: missing Debian packages. Run as root:" >&2
  echo "  apt-get install -y $missing" >&2
  if [ -n "${required// /}" ]; then
    echo "odpemu: cannot continue without: $required" >&2
    return 1
  fi
  echo "odpemu: continuing without the optional ones (fuzzing/CI extras are skipped)" >&2
}
