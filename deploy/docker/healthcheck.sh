#!/bin/bash
# Docker HEALTHCHECK without curl in the image: GET /health over bash's
# /dev/tcp; healthy on HTTP 200 only (503 while loading or draining).
set -eu
port="${TESSERA_HTTP_PORT:-8080}"
exec 3<>"/dev/tcp/127.0.0.1/${port}"
printf 'GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3
read -r -t 5 status_line <&3
case "$status_line" in
  "HTTP/1.1 200"*) exit 0 ;;
  *) exit 1 ;;
esac
