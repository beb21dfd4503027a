#!/bin/sh
# The images' entrypoint: `tessera serve` with the mounted configuration,
# any arguments passed through (they override the file's ports, host and
# limits). exec, so SIGTERM from the runtime reaches the daemon, which drains.
set -eu
bin="${TESSERA_BIN:-/usr/local/bin/tessera}"
config="${TESSERA_CONFIG:-/etc/tessera/config.yaml}"
if [ ! -f "$config" ]; then
  echo "tessera: no configuration at $config (mount one there, or set TESSERA_CONFIG)" >&2
  exit 64
fi
exec "$bin" serve --config "$config" "$@"
