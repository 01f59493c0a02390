#!/usr/bin/env bash
# Start, stop and inspect the project's own service instances on 127.0.0.1.
#
#   scripts/services.sh start|stop|status [redis|postgres|es|es2 ...]
#
# With no service named: redis, postgres and es. `es2` is a three-node Elasticsearch cluster on
# loopback: es2-a and es2-b (master-eligible, data) and es2-c (master-eligible only, a small
# heap), so a quorum of two master-eligible nodes survives losing any one node; new indices
# get two primaries and one replica there (docs/elasticsearch.md). Data and logs live
# under $SERVICES_RUN_DIR (default .services/run); nothing is installed system-wide, and the
# Debian system services are not used. `start` waits until each service is healthy and prints
# the variables to export on stdout, so this works:
#
#   eval "$(scripts/services.sh start)"
#
# Settings (environment, defaults in brackets): SERVICES_DIR [.services], SERVICES_RUN_DIR
# [$SERVICES_DIR/run], REDIS_PORT [6379], PG_PORT [5432], PG_USER/PG_PASSWORD/PG_DB
# [search/search/search], ES_PORT [9200], ES_TRANSPORT_PORT [9300], ES2_PORTS [9201 9202 9203],
# ES2_TRANSPORT_PORTS [9301 9302 9303], ES_HEAP [512m], ES_MASTER_HEAP [256m] (es2-c),
# ES_HOME [$SERVICES_DIR/elasticsearch], ES_SNAPSHOT_DIR [$SERVICES_RUN_DIR/es-snapshots] (each
# cluster's `path.repo` is a directory under it that all its nodes share, where
# scripts/backup.sh writes snapshots),
# ES_USER [elasticsearch], ES_JAVA_HOME [/usr/lib/jvm/temurin-25-jdk-amd64], SERVICES_WAIT_S [180].
set -euo pipefail
# -h, --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SERVICES_DIR="${SERVICES_DIR:-$REPO/.services}"
RUN_DIR="${SERVICES_RUN_DIR:-$SERVICES_DIR/run}"
REDIS_PORT="${REDIS_PORT:-6379}"
PG_PORT="${PG_PORT:-5432}"
PG_USER="${PG_USER:-search}"
PG_PASSWORD="${PG_PASSWORD:-search}"
PG_DB="${PG_DB:-search}"
ES_PORT="${ES_PORT:-9200}"
ES_TRANSPORT_PORT="${ES_TRANSPORT_PORT:-9300}"
read -r -a ES2_PORTS <<<"${ES2_PORTS:-9201 9202 9203}"
read -r -a ES2_TRANSPORT_PORTS <<<"${ES2_TRANSPORT_PORTS:-9301 9302 9303}"
ES_HEAP="${ES_HEAP:-512m}"
ES_MASTER_HEAP="${ES_MASTER_HEAP:-256m}"
ES_HOME="${ES_HOME:-$SERVICES_DIR/elasticsearch}"
ES_SNAPSHOT_DIR="${ES_SNAPSHOT_DIR:-$RUN_DIR/es-snapshots}"
ES_USER="${ES_USER:-elasticsearch}"
ES_JAVA_HOME="${ES_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
WAIT_S="${SERVICES_WAIT_S:-180}"

log() { printf 'services: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Run a command as a service's own user when we are root (PostgreSQL and Elasticsearch
# refuse to run as root); as ourselves otherwise.
as_user() {
    local user="$1"
    shift
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u "$user" -- "$@"
    else
        "$@"
    fi
}

# Create a directory that $user owns, and check that $user can reach it (a repository under
# a private home directory cannot be used by a system user).
own_dir() {
    local user="$1" dir="$2"
    mkdir -p "$dir"
    if [[ $(id -u) -eq 0 ]]; then
        chown -R "$user:" "$dir"
        as_user "$user" test -w "$dir" \
            || die "user $user cannot reach $dir; set SERVICES_RUN_DIR to a directory it can" \
                   "reach (e.g. /var/tmp/search-services)"
    fi
}

pid_alive() {
    local pidfile="$1"
    [[ -s "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

stop_pid() {
    local name="$1" pidfile="$2" pid
    if ! pid_alive "$pidfile"; then
        log "$name: not running"
        return
    fi
    pid="$(cat "$pidfile")"
    kill -TERM "$pid"
    for _ in $(seq 1 120); do
        kill -0 "$pid" 2>/dev/null || { log "$name: stopped"; rm -f "$pidfile"; return; }
        sleep 0.5
    done
    log "$name: did not stop in 60 s; killing"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

wait_until() {
    local name="$1" pidfile="$2" logfile="$3"
    shift 3
    local deadline=$((SECONDS + WAIT_S))
    until "$@" >/dev/null 2>&1; do
        if ! pid_alive "$pidfile"; then
            tail -n 30 "$logfile" >&2 2>/dev/null || true
            die "$name exited while starting; log: $logfile"
        fi
        ((SECONDS < deadline)) || die "$name not healthy after $WAIT_S s; log: $logfile"
        sleep 0.5
    done
}

# --- Redis -------------------------------------------------------------------------------

redis_url() { echo "redis://127.0.0.1:$REDIS_PORT/0"; }

redis_start() {
    local dir="$RUN_DIR/redis"
    mkdir -p "$dir"
    if pid_alive "$dir/redis.pid"; then
        log "redis: already running"
    else
        redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$dir" \
            --appendonly yes --appendfsync everysec \
            --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
        wait_until redis "$dir/redis.pid" "$dir/redis.log" \
            bash -c "[[ \$(redis-cli -h 127.0.0.1 -p $REDIS_PORT ping) == PONG ]]"
        log "redis: up on port $REDIS_PORT (AOF on)"
    fi
    echo "export REDIS_URL=$(redis_url)"
}

redis_stop() {
    local pidfile="$RUN_DIR/redis/redis.pid"
    if pid_alive "$pidfile"; then
        # SHUTDOWN writes the AOF out before the server exits.
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown >/dev/null 2>&1 || true
        for _ in $(seq 1 60); do
            pid_alive "$pidfile" || break
            sleep 0.5
        done
        pid_alive "$pidfile" || { log "redis: stopped"; return; }
    fi
    stop_pid redis "$pidfile"
}

redis_status() {
    if pid_alive "$RUN_DIR/redis/redis.pid"; then
        log "redis: running, $(redis_url)"
    else
        log "redis: stopped"
    fi
}

# --- PostgreSQL ----------------------------------------------------------------------------

pg_bin() {
    local bindir
    bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [[ -n "$bindir" ]] || die "PostgreSQL is not installed; run scripts/install-services.sh"
    echo "$bindir"
}

pg_url() { echo "postgresql://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB"; }

pg_start() {
    local dir="$RUN_DIR/postgres" bin
    bin="$(pg_bin)"
    own_dir postgres "$dir"
    if [[ ! -s "$dir/data/PG_VERSION" ]]; then
        as_user postgres "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust \
            --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    fi
    if as_user postgres "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        log "postgres: already running"
    else
        as_user postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t "$WAIT_S" \
            -o "-p $PG_PORT -k $dir -c listen_addresses=127.0.0.1" start >/dev/null \
            || { tail -n 30 "$dir/postgres.log" >&2; die "postgres did not start"; }
        log "postgres: up on port $PG_PORT"
    fi
    local psql=("$bin/psql" -h "$dir" -p "$PG_PORT" -U postgres -d postgres -qtA -v ON_ERROR_STOP=1)
    if [[ -z "$(as_user postgres "${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='$PG_USER'")" ]]; then
        as_user postgres "${psql[@]}" \
            -c "CREATE ROLE \"$PG_USER\" LOGIN CREATEDB PASSWORD '$PG_PASSWORD'"
    fi
    if [[ -z "$(as_user postgres "${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='$PG_DB'")" ]]; then
        as_user postgres "${psql[@]}" -c "CREATE DATABASE \"$PG_DB\" OWNER \"$PG_USER\""
    fi
    echo "export DATABASE_URL=$(pg_url)"
}

pg_stop() {
    local dir="$RUN_DIR/postgres" bin
    bin="$(pg_bin)"
    if [[ -s "$dir/data/PG_VERSION" ]] \
        && as_user postgres "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_user postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
        log "postgres: stopped"
    else
        log "postgres: not running"
    fi
}

pg_status() {
    local dir="$RUN_DIR/postgres" bin
    bin="$(pg_bin)"
    if [[ -s "$dir/data/PG_VERSION" ]] \
        && as_user postgres "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        log "postgres: running, $(pg_url)"
    else
        log "postgres: stopped"
    fi
}

# --- Elasticsearch -------------------------------------------------------------------------

es_check_installed() {
    [[ -x "$ES_HOME/bin/elasticsearch" ]] \
        || die "Elasticsearch is not installed at $ES_HOME; run scripts/install-services.sh"
    [[ -x "$ES_JAVA_HOME/bin/java" ]] || die "no Java at $ES_JAVA_HOME; set ES_JAVA_HOME"
}

# es_node_start NAME CLUSTER HTTP_PORT TRANSPORT_PORT EXTRA_YAML [HEAP]: start one node,
# detached.
es_node_start() {
    local name="$1" cluster="$2" http_port="$3" transport_port="$4" extra="$5"
    local heap="${6:-$ES_HEAP}"
    local dir="$RUN_DIR/$name"
    if pid_alive "$dir/es.pid"; then
        log "$name: already running"
        return
    fi
    own_dir "$ES_USER" "$dir"
    own_dir "$ES_USER" "$ES_SNAPSHOT_DIR/$cluster"
    mkdir -p "$dir/data" "$dir/logs" "$dir/config"
    cp -r "$ES_HOME/config/." "$dir/config/"
    cat >"$dir/config/elasticsearch.yml" <<EOF
cluster.name: search-$cluster
node.name: $name
path.data: $dir/data
path.logs: $dir/logs
path.repo: [$ES_SNAPSHOT_DIR/$cluster]
network.host: 127.0.0.1
http.port: $http_port
transport.port: $transport_port
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
$extra
EOF
    chown -R "$ES_USER:" "$dir" 2>/dev/null || true
    as_user "$ES_USER" env ES_JAVA_HOME="$ES_JAVA_HOME" ES_PATH_CONF="$dir/config" \
        ES_JAVA_OPTS="-Xms$heap -Xmx$heap" \
        "$ES_HOME/bin/elasticsearch" -d -p "$dir/es.pid" >"$dir/logs/startup.log" 2>&1 \
        || { tail -n 30 "$dir/logs/startup.log" >&2; die "$name did not start"; }
    log "$name: started (pid $(cat "$dir/es.pid"), http $http_port, transport $transport_port)"
}

# es_wait NODE CLUSTER PORT NODES: wait until the cluster has NODES nodes and is yellow.
es_wait() {
    local name="$1" cluster="$2" port="$3" nodes="$4"
    wait_until "$name" "$RUN_DIR/$name/es.pid" "$RUN_DIR/$name/logs/search-$cluster.log" \
        curl -sf "http://127.0.0.1:$port/_cluster/health?wait_for_status=yellow&wait_for_nodes=$nodes&timeout=2s"
}

es_start() {
    es_check_installed
    es_node_start es es "$ES_PORT" "$ES_TRANSPORT_PORT" "discovery.type: single-node"
    es_wait es es "$ES_PORT" 1
    log "es: healthy on http://127.0.0.1:$ES_PORT"
    echo "export ELASTICSEARCH_URL=http://127.0.0.1:$ES_PORT"
}

es2_start() {
    es_check_installed
    ((${#ES2_PORTS[@]} == 3 && ${#ES2_TRANSPORT_PORTS[@]} == 3)) \
        || die "ES2_PORTS and ES2_TRANSPORT_PORTS need three ports each (es2-a es2-b es2-c)"
    local seeds="127.0.0.1:${ES2_TRANSPORT_PORTS[0]}, 127.0.0.1:${ES2_TRANSPORT_PORTS[1]}, 127.0.0.1:${ES2_TRANSPORT_PORTS[2]}"
    # Three master-eligible nodes: any two are a quorum, so the cluster keeps a master when
    # any one node dies (Elasticsearch's resilience guide). es2-c holds no data and only
    # breaks ties, so it gets a small heap.
    local common="discovery.seed_hosts: [$seeds]
cluster.initial_master_nodes: [es2-a, es2-b, es2-c]"
    # The nodes boot in parallel: each takes most of its start-up time on its own.
    es_node_start es2-a es2 "${ES2_PORTS[0]}" "${ES2_TRANSPORT_PORTS[0]}" \
        "$common
node.roles: [master, data, ingest]" &
    local a=$!
    es_node_start es2-b es2 "${ES2_PORTS[1]}" "${ES2_TRANSPORT_PORTS[1]}" \
        "$common
node.roles: [master, data, ingest]" &
    local b=$!
    es_node_start es2-c es2 "${ES2_PORTS[2]}" "${ES2_TRANSPORT_PORTS[2]}" \
        "$common
node.roles: [master]" "$ES_MASTER_HEAP" &
    local c=$!
    wait "$a" || die "es2-a did not start"
    wait "$b" || die "es2-b did not start"
    wait "$c" || die "es2-c did not start"
    es_wait es2-a es2 "${ES2_PORTS[0]}" 3
    log "es2: healthy, 3 nodes on http ports ${ES2_PORTS[*]}"
    echo "export ELASTICSEARCH_URL=http://127.0.0.1:${ES2_PORTS[0]},http://127.0.0.1:${ES2_PORTS[1]},http://127.0.0.1:${ES2_PORTS[2]}"
}

es_status_node() {
    local name="$1" port="$2"
    if pid_alive "$RUN_DIR/$name/es.pid"; then
        log "$name: running, http://127.0.0.1:$port"
    else
        log "$name: stopped"
    fi
}

# --- dispatch ------------------------------------------------------------------------------

main() {
    local action="${1:-}"
    shift || true
    local services=("$@")
    ((${#services[@]})) || services=(redis postgres es)
    mkdir -p "$RUN_DIR"
    for svc in "${services[@]}"; do
        case "$action:$svc" in
            start:redis) redis_start ;;
            stop:redis) redis_stop ;;
            status:redis) redis_status ;;
            start:postgres) pg_start ;;
            stop:postgres) pg_stop ;;
            status:postgres) pg_status ;;
            start:es) es_start ;;
            stop:es) stop_pid es "$RUN_DIR/es/es.pid" ;;
            status:es) es_status_node es "$ES_PORT" ;;
            start:es2) es2_start ;;
            stop:es2)
                stop_pid es2-c "$RUN_DIR/es2-c/es.pid"
                stop_pid es2-b "$RUN_DIR/es2-b/es.pid"
                stop_pid es2-a "$RUN_DIR/es2-a/es.pid"
                ;;
            status:es2)
                es_status_node es2-a "${ES2_PORTS[0]}"
                es_status_node es2-b "${ES2_PORTS[1]}"
                es_status_node es2-c "${ES2_PORTS[2]}"
                ;;
            *)
                die "usage: $0 start|stop|status [redis|postgres|es|es2 ...]"
                ;;
        esac
    done
}

main "$@"
