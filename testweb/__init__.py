"""A deterministic local multi-host test web for crawler tests and benchmarks.

``python -m testweb --hosts N --port P --log FILE`` serves it; ``TestWeb`` is its ground
truth; ``run()`` starts the server as a subprocess for a test.
"""

from testweb.messages import PageInfo, PageLink, Request, Response
from testweb.runner import TestWebProcess, run
from testweb.web import TestWeb

__all__ = ["PageInfo", "PageLink", "Request", "Response", "TestWeb", "TestWebProcess", "run"]
