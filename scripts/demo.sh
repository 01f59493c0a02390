#!/usr/bin/env bash
# The embedded demo: install, start the local test web, crawl it, serve the search page.
#   bash scripts/demo.sh            (state under ./data; DATA_DIR=... to keep runs apart)
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTS=25          # testweb hosts crawled (site0.test .. site24.test)
MAX_PAGES=2500    # pages crawled before the crawl stops
TESTWEB_PORT=8471
WEB_ADDR=127.0.0.1:8000

bash scripts/setup.sh
export DATA_DIR="${DATA_DIR:-$PWD/data}"
mkdir -p "$DATA_DIR/logs"
py=.venv/bin/python

echo "demo: preparing the database and static files under $DATA_DIR"
$py manage.py migrate --noinput >/dev/null
$py manage.py collectstatic --noinput >/dev/null

echo "demo: starting testweb ($HOSTS hosts) on 127.0.0.1:$TESTWEB_PORT"
$py -m testweb --hosts "$HOSTS" --port "$TESTWEB_PORT" --log "$DATA_DIR/logs/testweb.log" \
    > "$DATA_DIR/logs/testweb.out" 2>&1 &
testweb_pid=$!
trap 'kill $testweb_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    grep -q "listening" "$DATA_DIR/logs/testweb.out" 2>/dev/null && break
    sleep 0.2
done
grep -q "listening" "$DATA_DIR/logs/testweb.out" || { cat "$DATA_DIR/logs/testweb.out"; exit 1; }

seeds="$DATA_DIR/demo-seeds.txt"
for i in $(seq 0 $((HOSTS - 1))); do echo "http://site$i.test:$TESTWEB_PORT/"; done > "$seeds"

echo "demo: crawling up to $MAX_PAGES pages (detailed log: $DATA_DIR/logs/crawl.log)"
.venv/bin/scrapy crawl web -a seeds_file="$seeds" -a allowed_hosts='*.test' \
    -a max_pages="$MAX_PAGES" -s RESOLVE_OVERRIDES='*.test=127.0.0.1' \
    -s SSRF_ALLOWED_NETWORKS=127.0.0.0/8 -s FRONTIER_DELAY=0.2 -s FRONTIER_IP_CONCURRENCY=32

echo "demo: ranking (PageRank over the link graph, in-process)"
$py manage.py rank

query=$($py -c "import testweb; print(testweb.TestWeb($HOSTS, $TESTWEB_PORT).page('site3.test', '/').title)")
echo "demo: sample query: $query"
$py manage.py search "$query" --size 5

echo
echo "Search page: http://$WEB_ADDR/   (Ctrl-C stops the server and testweb)"
# gunicorn, as in production (webui/gunicorn.conf.py; the WEB_* settings of webui/settings.py)
.venv/bin/gunicorn -c webui/gunicorn.conf.py --bind "$WEB_ADDR" webui.wsgi
