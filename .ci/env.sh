# Sourced by the two README commands (demo.sh, test.sh): they must run from a
# bare environment too (`env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin bash
# .ci/test.sh`, as a fresh container starts), where there is no HOME (cargo,
# rustup and R want one) and no locale (R would run in the C locale).
if [ -z "${HOME:-}" ]; then
  HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
  export HOME
fi
export LANG="${LANG:-C.UTF-8}"
