"""JSON log lines (``LOG_FORMAT=json`` in the environment): one object per line for a log
shipper, in the crawl and in the web app.

Each line: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``message``,
``pid``, and ``exception`` (the formatted traceback) when there is one.

The web app sets ``JsonFormatter`` on its handler (``webui.settings.LOGGING``). Scrapy builds
its log handlers itself, from ``LOG_FORMAT`` (a %-format), several times during start-up,
starting with its version banner; so the crawl (``crawler/settings.py``) installs
``JsonLogRecord`` as the record factory before any of that and sets Scrapy's format to
``%(message)s``: every handler Scrapy makes then writes the JSON line.
"""

from __future__ import annotations

import json
import logging
import time


def json_line(record: logging.LogRecord, message: str, exception: str | None) -> str:
    """The JSON object of one record."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    line = {
        "time": f"{stamp}.{int(record.msecs):03d}Z",
        "level": record.levelname,
        "logger": record.name,
        "message": message,
        "pid": record.process,
    }
    if exception:
        line["exception"] = exception
    return json.dumps(line, ensure_ascii=False, default=str)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        if isinstance(record, JsonLogRecord):
            return record.getMessage()  # already its JSON line
        exception = record.exc_text
        if record.exc_info:
            exception = self.formatException(record.exc_info)
        return json_line(record, record.getMessage(), exception)


class JsonLogRecord(logging.LogRecord):
    """A record whose message is its whole JSON line (traceback inside), for formatters
    that print ``%(message)s``; computed once, so every handler writes the same line."""

    def getMessage(self) -> str:
        line = self.__dict__.get("_json_line")
        if line is None:
            exception = self.exc_text
            if self.exc_info:
                exception = logging.Formatter().formatException(self.exc_info)
            line = json_line(self, super().getMessage(), exception)
            self._json_line = line
            self.exc_info = self.exc_text = self.stack_info = None  # inside the line now
        return line


def install_json_records() -> None:
    """Make every log record of this process a ``JsonLogRecord``."""
    logging.setLogRecordFactory(JsonLogRecord)
