#!/usr/bin/env bash
# A latency-sensitive service and its load generator as one app: nginx (master
# and $OMP_NUM_THREADS workers, default 2) serving a fixed 2-byte response on
# 127.0.0.1:$PORT (default 20000 + the shell's pid mod 20000, so that runs on
# a shared machine do not meet on one port; it fails if nginx cannot bind),
# and wrk (one thread, 16 connections) measuring it in 1-second rounds for
# ${ROUNDS:-30} rounds. Each round prints
#   coloc-metric: <requests per second>
#   coloc-p99: <99th percentile latency>
# so a workload's metric regex reads the service's throughput live. The
# client runs inside the app, on the cores the policy gives the service: its
# CPU use is part of the service's cost under every policy alike.
set -euo pipefail
port=${PORT:-$((20000 + $$ % 20000))}
rounds=${ROUNDS:-30}
workers=${OMP_NUM_THREADS:-2}
dir=$(mktemp -d)
trap 'kill "$srv" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  server { listen 127.0.0.1:$port; location / { return 200 "ok"; } }
}
CONF
nginx -c "$dir/nginx.conf" -p "$dir" &
srv=$!
# Up once it wrote its pid file (after binding its port); a failed bind ends
# it, and wrk must not measure whatever else listens there.
for _ in $(seq 100); do
  [ -s "$dir/nginx.pid" ] && break
  kill -0 "$srv" 2>/dev/null || break
  sleep 0.1
done
if [ ! -s "$dir/nginx.pid" ]; then
  echo "nginx-wrk: nginx did not start on 127.0.0.1:$port:" >&2
  cat "$dir/error.log" >&2 2>/dev/null || true
  exit 1
fi
for _ in $(seq "$rounds"); do
  wrk -t1 -c16 -d1s --latency "http://127.0.0.1:$port/" |
    awk '/Requests\/sec/ {r = $2} $1 == "99%" {p = $2} END {print "coloc-metric: " r; print "coloc-p99: " p}'
done
