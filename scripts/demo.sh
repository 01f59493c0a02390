#!/usr/bin/env bash
# The embedded demo on real documentation: install, serve three Debian documentation
# packages as sites (testweb --real-docs), crawl them, rank, embed their sections
# (semantic matching), print a few searches, then serve the search page.
#   bash scripts/demo.sh            (state under ./data; DATA_DIR=... to keep runs apart)
#   bash scripts/demo.sh --no-serve (stop after the searches: tests/test_demo.py)
# TESTWEB_PORT and WEB_ADDR (default 8471 and 127.0.0.1:8000) move the two servers.
set -euo pipefail
# -h, --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
serve=1
case "${1:-}" in
    "") ;;
    --no-serve) serve=0 ;;
    *) echo "demo: unknown argument $1 (--help says what it takes)" >&2; exit 2 ;;
esac

# The documentation packages served (testweb/docsites.py names their hosts) and crawled.
PACKAGES=(git-doc python-flask-doc python-requests-doc)
SITES=(git.test flask.test requests.test)
MAX_PAGES=1000    # pages crawled before the crawl stops (the three sites hold ~320)
TESTWEB_PORT=${TESTWEB_PORT:-8471}
WEB_ADDR=${WEB_ADDR:-127.0.0.1:8000}
QUERIES=(
    "how do I undo the last commit"
    "git rebase --interactive"
    "flask blueprint templates"
    '"session objects" site:requests.test'
)

bash scripts/setup.sh
export DATA_DIR="${DATA_DIR:-$PWD/data}"
mkdir -p "$DATA_DIR/logs"
py=.venv/bin/python

missing=()
for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "demo: installing the documentation to crawl: ${missing[*]}"
    sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null || {
        echo "demo: could not install ${missing[*]}; run: apt-get install -y ${missing[*]}" >&2
        exit 1
    }
fi

echo "demo: preparing the database and static files under $DATA_DIR"
$py manage.py migrate --noinput >/dev/null
$py manage.py collectstatic --noinput >/dev/null

echo "demo: serving the documentation sites (testweb --real-docs) on 127.0.0.1:$TESTWEB_PORT"
$py -m testweb --real-docs --hosts 1 --port "$TESTWEB_PORT" \
    --log "$DATA_DIR/logs/testweb.log" > "$DATA_DIR/logs/testweb.out" 2>&1 &
testweb_pid=$!
trap 'kill $testweb_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    grep -q "listening" "$DATA_DIR/logs/testweb.out" 2>/dev/null && break
    sleep 0.2
done
grep -q "listening" "$DATA_DIR/logs/testweb.out" || { cat "$DATA_DIR/logs/testweb.out"; exit 1; }

seeds="$DATA_DIR/demo-seeds.txt"
for site in "${SITES[@]}"; do echo "http://$site:$TESTWEB_PORT/"; done > "$seeds"
allowed=$(IFS=,; echo "${SITES[*]}")

echo "demo: crawling ${SITES[*]} (detailed log: $DATA_DIR/logs/crawl.log)"
.venv/bin/scrapy crawl web -a seeds_file="$seeds" -a allowed_hosts="$allowed" \
    -a max_pages="$MAX_PAGES" -s RESOLVE_OVERRIDES='*.test=127.0.0.1' \
    -s SSRF_ALLOWED_NETWORKS=127.0.0.0/8 -s FRONTIER_DELAY=0.1

echo "demo: ranking (PageRank over the link graph, in-process)"
$py manage.py rank

echo "demo: embedding the pages' sections (semantic matching, in-process)"
$py manage.py embed --budget 100000

for query in "${QUERIES[@]}"; do
    echo
    echo "demo: search: $query"
    $py manage.py search "$query" --size 3
done

((serve)) || exit 0
echo
echo "Search page: http://$WEB_ADDR/   (Ctrl-C stops the server and testweb)"
# gunicorn, as in production (webui/gunicorn.conf.py; the WEB_* settings of webui/settings.py)
.venv/bin/gunicorn -c webui/gunicorn.conf.py --bind "$WEB_ADDR" webui.wsgi
