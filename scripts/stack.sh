#!/usr/bin/env bash
# The whole distributed stack on one box, no Docker:
#
#   scripts/stack.sh up       Redis (AOF), a three-node Elasticsearch (two data nodes and a
#                             master-eligible tie-breaker: any node may die), PostgreSQL (migrated),
#                             the test web, N crawl workers on the Redis frontier, a Celery
#                             worker and beat, and the web UI (gunicorn); returns when all
#                             are up.
#   scripts/stack.sh down     stops the processes, then the services.
#   scripts/stack.sh status   the services and the processes.
#
# The services come from scripts/services.sh; the processes run under scripts/supervise.py
# from a Procfile written to $STACK_DIR/Procfile: a process that dies (a crawl worker
# SIGKILLed) is restarted, the others keep running. The crawl workers run with
# `-a continuous=1`: they stay up when idle, and wait for seeds when there are none.
# The seeds (the test web's home pages) are pushed to the Redis list `web:start_urls`, which
# every worker pops; push more with
#   redis-cli -p $REDIS_PORT rpush web:start_urls http://...
# The web UI runs under gunicorn (webui/gunicorn.conf.py: workers, threads and timeouts from
# the WEB_* settings of webui/settings.py, static files collected for whitenoise); crawl
# worker N serves its Prometheus metrics on port $STACK_METRICS_PORT + N - 1, the web UI
# its own at /metrics, with /healthz and /readyz beside.
# Logs: $STACK_DIR/stack.log (every process, prefixed by its name), the services' logs under
# $SERVICES_RUN_DIR, the test web's request log in $STACK_DIR/testweb.log, the crawl's data
# (WARC, link graph, stats) under $DATA_DIR. $STACK_DIR/stack.env holds the variables to source.
#
# Settings (environment, defaults in brackets): STACK_DIR [.services/stack], STACK_WORKERS [2],
# STACK_HOSTS [200] (test web hosts), TESTWEB_PORT [8471], WEB_PORT [8000], DATA_DIR
# [$STACK_DIR/data], STACK_CRAWL_SETTINGS (extra "-s NAME=VALUE ..." for the workers),
# STACK_WAIT_S [120], STACK_METRICS_PORT [9410], STACK_WEB_WORKERS (gunicorn --workers;
# default: the WEB_WORKERS setting), PYTHON [.venv/bin/python], and every setting of scripts/services.sh
# (SERVICES_RUN_DIR [$STACK_DIR/run], REDIS_PORT, PG_PORT, ES2_PORTS, ES2_TRANSPORT_PORTS,
# ES_HEAP, ES_HOME...).
set -euo pipefail
# -h, --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_DIR="${STACK_DIR:-$REPO/.services/stack}"
STACK_DIR="$(mkdir -p "$STACK_DIR" && cd "$STACK_DIR" && pwd)"
export SERVICES_RUN_DIR="${SERVICES_RUN_DIR:-$STACK_DIR/run}"
WORKERS="${STACK_WORKERS:-2}"
HOSTS="${STACK_HOSTS:-200}"
TESTWEB_PORT="${TESTWEB_PORT:-8471}"
WEB_PORT="${WEB_PORT:-8000}"
DATA="${DATA_DIR:-$STACK_DIR/data}"
WAIT_S="${STACK_WAIT_S:-120}"
METRICS_PORT="${STACK_METRICS_PORT:-9410}"
PY="${PYTHON:-$REPO/.venv/bin/python}"
SERVICES_SH="$REPO/scripts/services.sh"
PIDFILE="$STACK_DIR/supervisor.pid"
LOGFILE="$STACK_DIR/stack.log"
#: seconds the processes get to exit after SIGTERM (a crawl worker flushes its WARC and index)
GRACE_S=60
ENVFILE="$STACK_DIR/stack.env"

log() { printf 'stack: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

supervisor_alive() { [[ -s "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

write_procfile() {
    local crawl_settings=(
        -s "RESOLVE_OVERRIDES=*.test=127.0.0.1"
        -s SSRF_ALLOWED_NETWORKS=127.0.0.0/8 -s FRONTIER_DELAY=0.2
        -s FRONTIER_IP_CONCURRENCY=1000000 -s LOG_LEVEL=INFO
    )
    {
        echo "testweb: exec $PY -m testweb --hosts $HOSTS --port $TESTWEB_PORT --log $STACK_DIR/testweb.log"
        for n in $(seq 1 "$WORKERS"); do
            echo "crawl$n: exec $PY -m scrapy crawl web -a continuous=1 -a 'allowed_hosts=*.test' ${crawl_settings[*]@Q} -s STATS_EXPORT_WORKER=crawl$n -s CRAWL_METRICS_PORT=$((METRICS_PORT + n - 1)) ${STACK_CRAWL_SETTINGS:-}"
        done
        echo "celery: exec $PY -m celery -A batch.celery_app worker --loglevel=INFO --concurrency=1 --hostname=rank@%h"
        echo "beat: exec $PY -m celery -A batch.celery_app beat --loglevel=INFO --schedule=$DATA/celerybeat-schedule"
        echo "web: exec $PY -m gunicorn -c webui/gunicorn.conf.py --bind 127.0.0.1:$WEB_PORT ${STACK_WEB_WORKERS:+--workers $STACK_WEB_WORKERS} webui.wsgi"
    } >"$STACK_DIR/Procfile"
}

wait_for() {
    local what="$1"
    shift
    local deadline=$((SECONDS + WAIT_S))
    until "$@" >/dev/null 2>&1; do
        supervisor_alive || { tail -n 40 "$LOGFILE" >&2; die "the stack died starting $what"; }
        ((SECONDS < deadline)) || die "$what not up after $WAIT_S s; log: $LOGFILE"
        sleep 0.5
    done
}

up() {
    supervisor_alive && die "already up (supervisor pid $(cat "$PIDFILE")); run: $0 down"
    [[ -x "$PY" ]] || die "no Python at $PY: run scripts/setup.sh, or set PYTHON"
    mkdir -p "$DATA"
    log "starting Redis, PostgreSQL and a three-node Elasticsearch"
    local exports
    exports="$(bash "$SERVICES_SH" start redis postgres es2)"
    {
        echo "$exports"
        echo "export DATA_DIR=$DATA"
        echo "export PYTHONPATH=$REPO"
    } >"$ENVFILE"
    # shellcheck disable=SC1090
    source "$ENVFILE"
    log "migrating the PostgreSQL database"
    (cd "$REPO" && "$PY" manage.py migrate --noinput >"$STACK_DIR/migrate.log" 2>&1) \
        || { cat "$STACK_DIR/migrate.log" >&2; die "migrate failed"; }
    (cd "$REPO" && "$PY" manage.py collectstatic --noinput >>"$STACK_DIR/migrate.log" 2>&1) \
        || { cat "$STACK_DIR/migrate.log" >&2; die "collectstatic failed"; }
    write_procfile
    log "starting $WORKERS crawl workers, Celery worker + beat, the web UI, the test web ($HOSTS hosts)"
    (cd "$REPO" && exec setsid "$PY" "$REPO/scripts/supervise.py" -f "$STACK_DIR/Procfile" \
        -d "$REPO" -e "$ENVFILE" --grace "$GRACE_S" >"$LOGFILE" 2>&1 </dev/null) &
    echo $! >"$PIDFILE"
    wait_for "the test web" curl -s -o /dev/null "http://127.0.0.1:$TESTWEB_PORT/"
    local redis_port="${REDIS_URL##*:}"
    redis_port="${redis_port%%/*}"
    for i in $(seq 0 $((HOSTS - 1))); do echo "http://site$i.test:$TESTWEB_PORT/"; done \
        | xargs -n 500 redis-cli -h 127.0.0.1 -p "$redis_port" rpush web:start_urls >/dev/null
    log "pushed $HOSTS seeds to Redis list web:start_urls"
    wait_for "the web UI" curl -sf "http://127.0.0.1:$WEB_PORT/healthz"
    log "up: search http://127.0.0.1:$WEB_PORT/  (logs: $LOGFILE; env: source $ENVFILE)"
    cat "$ENVFILE"
}

down() {
    if supervisor_alive; then
        local pid
        pid="$(cat "$PIDFILE")"
        # The supervisor sends SIGTERM to every process and gives them GRACE_S seconds: each
        # crawl worker closes its spider (leases back to the frontier, WARC and index batches
        # flushed) while the services it writes to are still up.
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 $((2 * GRACE_S + 20))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "processes did not stop in $((GRACE_S + 10)) s; killing their groups"
            kill -KILL -- "-$pid" 2>/dev/null || true
            local child
            for child in $(sed -n 's/.*| started (pid=\([0-9]*\)).*/\1/p' "$LOGFILE"); do
                kill -KILL -- "-$child" 2>/dev/null || true
            done
        fi
        log "processes stopped"
    else
        log "processes: not running"
    fi
    rm -f "$PIDFILE"
    bash "$SERVICES_SH" stop redis postgres es2
}

status() {
    bash "$SERVICES_SH" status redis postgres es2
    if supervisor_alive; then
        log "processes: running (supervisor pid $(cat "$PIDFILE")): $(cut -d: -f1 "$STACK_DIR/Procfile" | tr '\n' ' ')"
    else
        log "processes: stopped"
    fi
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    *) die "usage: $0 up|down|status" ;;
esac
