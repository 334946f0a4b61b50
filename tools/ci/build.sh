# shellcheck shell=bash
# Sourced by tools/test and tools/demo: configure a Meson build directory idempotently.

# odpemu_configure <builddir> <log> <meson options...>: set up, or reconfigure when the
# directory already exists (safe to re-run). Prints the log's tail on failure.
odpemu_configure() {
  local dir=$1 log=$2; shift 2
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >"$log" 2>&1
  else
    meson setup "$dir" "$@" >"$log" 2>&1
  fi || { echo "odpemu: meson setup $dir failed:"; tail -n 30 "$log"; return 1; }
}
