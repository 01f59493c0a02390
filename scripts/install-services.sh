#!/usr/bin/env bash
# Install what the distributed stack runs on, on a fresh Debian machine, as root.
#
#   sudo scripts/install-services.sh
#
# - the Debian packages listed in scripts/apt-packages.txt (Redis, PostgreSQL, Chromium, the
#   Java 17 runtime that PySpark's JVM runs on for RANK_ENGINE=spark, ..., and the
#   documentation packages of testweb --real-docs, without their recommended software);
# - Elasticsearch: the integ-test-zip distribution from Maven Central, unpacked under
#   .services/elasticsearch-<version>/ (symlinked as .services/elasticsearch), owned by root
#   and run by scripts/services.sh as the system user $ES_USER (Elasticsearch refuses root).
#
# Idempotent: packages already installed are not fetched again, and an unpacked Elasticsearch
# of the same version is kept. Settings (environment): ES_VERSION, ES_USER, SERVICES_DIR,
# ES_JAVA_HOME.
set -euo pipefail
# -h, --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SERVICES_DIR="${SERVICES_DIR:-$REPO/.services}"
# The newest 9.x integ-test-zip that Maven Central serves here (9.5.x is not published).
ES_VERSION="${ES_VERSION:-9.2.0}"
ES_ARTIFACT="org.elasticsearch.distribution.integ-test-zip:elasticsearch:${ES_VERSION}:zip"
ES_USER="${ES_USER:-elasticsearch}"
ES_JAVA_HOME="${ES_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
MVN_DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

log() { printf 'install-services: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "run as root (it installs Debian packages and creates a system user)"

install_apt_packages() {
    local wanted missing=()
    mapfile -t wanted < <(grep -Ev '^\s*(#|$)' "$REPO/scripts/apt-packages.txt")
    for pkg in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done
    if ((${#missing[@]} == 0)); then
        log "Debian packages: all ${#wanted[@]} installed"
        return
    fi
    log "Debian packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    local docs=() others=()
    for pkg in "${missing[@]}"; do
        case $pkg in
            *-doc | *-docs | *-doc-[0-9]* | *-doc-html | *-doc-en | debian-handbook) docs+=("$pkg") ;;
            *) others+=("$pkg") ;;
        esac
    done
    if ((${#others[@]})); then
        apt-get install -y -qq "${others[@]}"
    fi
    # The documentation packages (testweb --real-docs) recommend the software they document
    # (apache2-doc: apache2, a server on port 80; python-flask-doc: python3-flask): only
    # the documents are wanted.
    if ((${#docs[@]})); then
        apt-get install -y -qq --no-install-recommends "${docs[@]}"
    fi
    # The Debian packages start system-wide Redis/PostgreSQL services; the project runs its
    # own instances from scripts/services.sh, so the system ones are not needed.
    if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
        systemctl disable --now redis-server postgresql >/dev/null 2>&1 || true
    fi
}

check_java() {
    [[ -x "$ES_JAVA_HOME/bin/java" ]] \
        || die "no Java at $ES_JAVA_HOME (Elasticsearch 9 needs Java 21+); set ES_JAVA_HOME"
    log "Java: $("$ES_JAVA_HOME/bin/java" -version 2>&1 | head -1)"
}

check_spark_java() {
    # PySpark (requirements.txt) starts its JVM with $JAVA_HOME/bin/java, else java on PATH;
    # Spark 4 runs on Java 17 or 21.
    local java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
    command -v "$java" >/dev/null 2>&1 || die "no java for Spark (install openjdk-17-jre-headless)"
    local version
    version="$("$java" -version 2>&1 | head -1)"
    [[ $version =~ \"(17|21)[.\"] ]] \
        || die "Spark needs Java 17 or 21, $java is: $version; set JAVA_HOME"
    log "Java for Spark: $version"
}

install_elasticsearch() {
    local home="$SERVICES_DIR/elasticsearch-$ES_VERSION"
    mkdir -p "$SERVICES_DIR"
    if [[ -x "$home/bin/elasticsearch" ]]; then
        log "Elasticsearch $ES_VERSION: already unpacked at $home"
    else
        local download="$SERVICES_DIR/downloads"
        mkdir -p "$download"
        log "Elasticsearch $ES_VERSION: fetching $ES_ARTIFACT"
        mvn -q -B "$MVN_DEPENDENCY_PLUGIN:copy" -Dartifact="$ES_ARTIFACT" \
            -DoutputDirectory="$download" >&2 \
            || die "could not fetch $ES_ARTIFACT from Maven Central; try another ES_VERSION"
        local tmp="$SERVICES_DIR/.unpack-$$"
        rm -rf "$tmp"
        unzip -q "$download/elasticsearch-$ES_VERSION.zip" -d "$tmp"
        mv "$tmp/elasticsearch-$ES_VERSION" "$home"
        rm -rf "$tmp"
    fi
    ln -sfn "elasticsearch-$ES_VERSION" "$SERVICES_DIR/elasticsearch"
    chmod -R a+rX "$home"
}

create_es_user() {
    if id "$ES_USER" >/dev/null 2>&1; then
        log "system user $ES_USER: exists"
    else
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$ES_USER"
        log "system user $ES_USER: created"
    fi
}

install_apt_packages
check_java
check_spark_java
create_es_user
install_elasticsearch
log "done; start the services with: scripts/services.sh start"
