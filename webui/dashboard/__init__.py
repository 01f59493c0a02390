"""Staff pages: the crawl dashboard and the URL inspector."""
