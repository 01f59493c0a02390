"""Real documentation sites from Debian packages, each served as its own host.

A ``DocSiteHost`` maps a host name to a directory (``/usr/share/doc/...``) and serves its
files as they are: the sites' own HTML, relative links, translations and near-copies are
untouched, so relevance can be judged on real pages. A directory without ``index.html``
gets a plain listing of its HTML files and subdirectories, as a web server's autoindex
would. Each site has a robots.txt that keeps crawlers out of build by-products
(``_sources/``, ``_static/``, ...) the way the public sites do.

``DOC_SITES`` names the sites and the Debian packages that install them
(``scripts/apt-packages.txt`` lists the packages); ``available_doc_sites()`` is the subset
installed on this machine.
"""

from __future__ import annotations

import html
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from testweb.kinds import HTML_TYPE, HostKind, Web, not_found, register, text_response
from testweb.messages import Request, Response

# Files symlinked out of a site (Debian shares jQuery, MathJax, fonts) must stay below this.
SHARED_ROOT = Path("/usr/share")

DEFAULT_DISALLOW = ("/_sources/", "/_static/", "/_images/", "/_downloads/", "/_modules/")


@dataclass(frozen=True)
class DocSite:
    """A documentation site: its host name, the package installing it, its root directory,
    the paths its robots.txt disallows and, for a mirror, the host it copies."""

    host: str
    package: str
    root: Path
    disallow: tuple[str, ...] = DEFAULT_DISALLOW
    #: The host this one mirrors (serves a copy of), or "" for an original site.
    mirror_of: str = ""
    #: A file below ``root`` that only the package installs, for a root directory that
    #: exists without it (``/usr/share/doc/diffutils`` holds diffutils' own changelog).
    marker: str = ""

    @property
    def installed(self) -> bool:
        """True when the package's files are there."""
        return self.root.is_dir() and (not self.marker or (self.root / self.marker).is_file())


DOC_SITES: tuple[DocSite, ...] = (
    DocSite("debian-handbook.test", "debian-handbook",
            Path("/usr/share/doc/debian-handbook/html"), ("/*/Common_Content/",)),
    DocSite("git.test", "git-doc", Path("/usr/share/doc/git/html")),
    DocSite("python.test", "python3.11-doc", Path("/usr/share/doc/python3.11/html")),
    DocSite("django.test", "python-django-doc", Path("/usr/share/doc/python-django-doc/html")),
    DocSite("scipy.test", "python-scipy-doc", Path("/usr/share/doc/python-scipy-doc/html")),
    DocSite("sphinx.test", "sphinx-doc", Path("/usr/share/doc/sphinx-doc/html")),
    DocSite("requests.test", "python-requests-doc",
            Path("/usr/share/doc/python-requests-doc/html")),
    DocSite("docutils.test", "docutils-doc", Path("/usr/share/doc/docutils-doc/docs")),
    DocSite("postgresql.test", "postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),
    # Apache's manual in 12 language trees; an untranslated page is a symlink to English.
    DocSite("httpd.test", "apache2-doc", Path("/usr/share/doc/apache2-doc/manual"), ()),
    DocSite("pandas.test", "python-pandas-doc", Path("/usr/share/doc/python-pandas-doc/html")),
    DocSite("cmake.test", "cmake-doc", Path("/usr/share/doc/cmake-data/html")),
    DocSite("sqlalchemy.test", "python-sqlalchemy-doc",
            Path("/usr/share/doc/python-sqlalchemy-doc/html")),
    DocSite("flask.test", "python-flask-doc", Path("/usr/share/doc/python-flask-doc/html")),
    DocSite("jinja.test", "python-jinja2-doc", Path("/usr/share/doc/python-jinja2-doc/html")),
    DocSite("click.test", "python-click-doc", Path("/usr/share/doc/python-click-doc/html")),
    DocSite("scrapy.test", "python-scrapy-doc", Path("/usr/share/doc/python-scrapy-doc/html")),
    DocSite("pytest.test", "python-pytest-doc", Path("/usr/share/doc/python-pytest-doc/html")),
    DocSite("sympy.test", "python-sympy-doc", Path("/usr/share/doc/python-sympy-doc/html")),
    DocSite("statsmodels.test", "python-statsmodels-doc",
            Path("/usr/share/doc/python-statsmodels-doc/html")),
    DocSite("dask.test", "python-dask-doc", Path("/usr/share/doc/python-dask-doc/html")),
    DocSite("sqlite.test", "sqlite3-doc", Path("/usr/share/doc/sqlite3"), marker="index.html"),
    # The zsh manual and the diffutils manual: texinfo chapters, each section also a small
    # page that redirects (meta refresh) into its chapter.
    DocSite("zsh.test", "zsh-doc", Path("/usr/share/doc/zsh-common/html")),
    DocSite("diffutils.test", "diffutils-doc", Path("/usr/share/doc/diffutils"),
            marker="index.html"),
    DocSite("celery.test", "python-celery-doc", Path("/usr/share/doc/python-celery-doc/html")),
    DocSite("tornado.test", "python-tornado-doc",
            Path("/usr/share/doc/python-tornado-doc/html")),
    DocSite("werkzeug.test", "python-werkzeug-doc",
            Path("/usr/share/doc/python-werkzeug-doc/html")),
    # Vim's help files as HTML: every title is "Vim documentation: <file>".
    DocSite("vim.test", "vim-doc", Path("/usr/share/doc/vim/html")),
    # The second sealed set (harness.relevance.SEALED_SETS): manuals of six kinds.
    # BIND's administrator manual: a configuration reference of hundreds of options on one
    # 1.5 MB page, and every man page on another.
    DocSite("bind9.test", "bind9-doc", Path("/usr/share/doc/bind9-doc/arm")),
    # The GNU Octave manual: texinfo, one page per node, and a small page per function
    # (XREFname.html) that redirects (meta refresh) to its definition.
    DocSite("octave.test", "octave-doc", Path("/usr/share/doc/octave/octave.html")),
    # FFmpeg: the tools' man pages as HTML (ffmpeg-all.html repeats the others in 2.5 MB)
    # and the C API's Doxygen pages; the root has no index.html, so it is a listing.
    DocSite("ffmpeg.test", "ffmpeg-doc", Path("/usr/share/doc/ffmpeg"),
            (*DEFAULT_DISALLOW, "/api/search/"), marker="manual/index.html"),
    DocSite("rsyslog.test", "rsyslog-doc", Path("/usr/share/doc/rsyslog-doc/html")),
    DocSite("aiohttp.test", "python-aiohttp-doc",
            Path("/usr/share/doc/python-aiohttp-doc/html")),
    # Exim's specification, a chapter a page; each chapter also chNN.html, a symlink.
    DocSite("exim.test", "exim4-doc-html", Path("/usr/share/doc/exim4-doc-html/spec_html")),
    # The third sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Postfix: every parameter defined on one 0.8 MB page (postconf.5.html), the daemons'
    # and commands' man pages as HTML, and a README per feature.
    DocSite("postfix.test", "postfix-doc", Path("/usr/share/doc/postfix/html"),
            marker="postconf.5.html"),
    # HAProxy: a 2.6 MB configuration manual on one page, the management guide, and the
    # Lua API (Sphinx, under /lua/); the root has no index.html, so it is a listing.
    DocSite("haproxy.test", "haproxy-doc", Path("/usr/share/doc/haproxy"),
            ("/lua/_sources/", "/lua/_static/", "/lua/_images/"),
            marker="html/configuration.html"),
    # The Lua 5.1 reference manual: the language and its library on one 0.25 MB page.
    DocSite("lua.test", "lua5.1-doc", Path("/usr/share/doc/lua5.1-doc/doc")),
    # R's manuals (an introduction, the language definition, installation, data import,
    # writing extensions, the FAQ), each one page of up to 1 MB; the root is a listing.
    DocSite("r-manuals.test", "r-doc-html", Path("/usr/share/doc/r-doc-html/manual")),
    # Wireshark's user's and developer's guides, a section a page; the root is a listing.
    DocSite("wireshark.test", "wireshark-doc", Path("/usr/share/doc/wireshark"),
            marker="wsug_html_chunked/index.html"),
    # lxml: hand-written chapters and the API reference (Sphinx, under /apidoc/).
    DocSite("lxml.test", "python-lxml-doc", Path("/usr/share/doc/python-lxml/html"),
            ("/apidoc/_sources/", "/apidoc/_static/", "/apidoc/_modules/")),
    # The fourth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Doxygen: every configuration tag on one page (config.html), every special command on
    # another, and the output of the manual's examples under /examples/.
    DocSite("doxygen.test", "doxygen-doc", Path("/usr/share/doc/doxygen/html")),
    # The flex manual: texinfo, one page per node (about 220 pages, the FAQ a page each).
    DocSite("flex.test", "flex-doc", Path("/usr/share/doc/flex-doc/html")),
    # The aptitude user's manual (DocBook, a section a page) with its man pages.
    DocSite("aptitude.test", "aptitude-doc-en", Path("/usr/share/doc/aptitude/html/en")),
    # GNU gettext: the manual, a chapter a page (index.html a symlink to gettext_toc.html);
    # the commands' man pages, FAQ and tutorial beside it are linked from no page.
    # /usr/share/doc/gettext exists without the package.
    DocSite("gettext.test", "gettext-doc", Path("/usr/share/doc/gettext"),
            marker="gettext_toc.html"),
    # NTPsec: the daemon's configuration options a topic a page, every tool's man page, the
    # reference clock drivers a page each.
    DocSite("ntpsec.test", "ntpsec-doc", Path("/usr/share/doc/ntpsec-doc/html")),
    # Cython: the language reference, user guide and tutorials (Sphinx).
    DocSite("cython.test", "cython-doc", Path("/usr/share/doc/cython-doc/html")),
    # The fifth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Apache Tomcat: a page per configuration element (config/: every attribute of a
    # Connector, Context, Valve, Realm ...) and the how-tos, about 100 mid-sized pages.
    DocSite("tomcat.test", "tomcat10-docs", Path("/usr/share/tomcat10-docs/docs")),
    # Varnish Cache: the users guide, the reference (VCL, varnishd's parameters, every
    # tool's man page) and the release notes (Sphinx).
    DocSite("varnish.test", "varnish-doc", Path("/usr/share/doc/varnish/html")),
    # The SCons user guide (DocBook, a section a page) with its appendices listing every
    # construction variable, builder, tool and function.
    DocSite("scons.test", "scons-doc", Path("/usr/share/doc/scons/HTML")),
    # Pillow (PIL): the handbook and the reference, a module a page (Sphinx).
    DocSite("pillow.test", "python-pil-doc", Path("/usr/share/doc/python-pil-doc/html")),
    # libvirt: the XML formats (a domain's on one 0.5 MB page), every command's man page,
    # the knowledge base and the C API's reference.
    DocSite("libvirt.test", "libvirt-doc", Path("/usr/share/doc/libvirt-doc/html")),
    # Knot DNS: configuration, operation, the reference of every configuration item on one
    # page, and each utility's man page (Sphinx).
    DocSite("knot.test", "knot-doc", Path("/usr/share/doc/knot-doc")),
    # The sixth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Slurm: every slurm.conf parameter on one 0.35 MB page, each command's man page
    # (sbatch, srun, scontrol ...) and the administrators' guides, about 130 pages; the
    # root has no index.html, so it is a listing.
    DocSite("slurm.test", "slurm-wlm-doc", Path("/usr/share/doc/slurm-wlm/html")),
    # ISC Kea: the administrator reference manual, a chapter a page (the DHCPv4 server's
    # 0.5 MB, the hook libraries' 1.1 MB), the management API and the log messages each on
    # one page, the man pages (Sphinx).
    DocSite("kea.test", "kea-doc", Path("/usr/share/doc/kea/html")),
    # Network UPS Tools: the user manual, the developer guide and the FAQ (DocBook, a
    # section a page, most of 2 to 20 kB; the FAQ also whole on FAQ.html); the root is a
    # listing.
    DocSite("nut.test", "nut-doc", Path("/usr/share/doc/nut-doc/html")),
    # mypy: the user guide, the command line and configuration file references, the
    # error codes (Sphinx).
    DocSite("mypy.test", "mypy-doc", Path("/usr/share/doc/mypy/html")),
    # psycopg2: usage and the API reference, a module or class a page (Sphinx).
    DocSite("psycopg2.test", "python-psycopg2-doc",
            Path("/usr/share/doc/python-psycopg2-doc/html")),
    # Coverage.py: the command line, the configuration reference, the API (Sphinx).
    DocSite("coverage.test", "python-coverage-doc",
            Path("/usr/share/doc/python-coverage-doc/html")),
    # The seventh sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # FRRouting: each routing daemon's configuration commands on its own page (BGP's 0.5
    # MB, OSPF's and zebra's 0.16 MB), the setup and vtysh guides (Sphinx, 43 pages).
    DocSite("frr.test", "frr-doc", Path("/usr/share/doc/frr/html")),
    # GNU MPFR: the texinfo manual of a C library, a node a page (every function of a
    # family on one page: initialization, arithmetic, transcendental ...), 49 pages.
    DocSite("mpfr.test", "libmpfr-doc", Path("/usr/share/doc/libmpfr-doc/mpfr.html")),
    # BorgBackup: each command's usage on its own page under /usage/, the quick start,
    # a 0.1 MB FAQ and the deployment guides (Sphinx).
    DocSite("borg.test", "borgbackup-doc", Path("/usr/share/doc/borgbackup/html")),
    # The Securing Debian Manual: a DocBook guide, a section a page, most of 3 to 15 kB;
    # English only (the package also installs seven translations beside it).
    DocSite("harden.test", "harden-doc", Path("/usr/share/doc/harden-doc/html/en-US")),
    # pyca/cryptography: Fernet, the hazmat primitives a page each, X.509 (Sphinx).
    DocSite("cryptography.test", "python-cryptography-doc",
            Path("/usr/share/doc/python-cryptography-doc/html")),
    # beets: a music library manager's guides, its configuration and command line
    # references and 69 plugins a page each (Sphinx).
    DocSite("beets.test", "beets-doc", Path("/usr/share/doc/beets/html")),
    # The eighth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # gnuplot: the plotting program's command reference, a command, plot style or `set`
    # option a page (latex2html, node1.html .. node649.html), 652 pages.
    DocSite("gnuplot.test", "gnuplot-doc", Path("/usr/share/doc/gnuplot/htmldocs")),
    # GNU Mailutils: the texinfo manual of a mail suite (its programs, the sieve language,
    # the configuration file syntax, the C library), a node a page, 306 pages.
    DocSite("mailutils.test", "mailutils-doc",
            Path("/usr/share/doc/mailutils/mailutils.html")),
    # ncurses: the C library's man pages in HTML, a family of functions a page (curs_getch,
    # curs_color, ...), the panel, menu and form libraries' and the terminfo tools' (137);
    # the HOWTO and the introduction beside them link to none of them and are left out.
    DocSite("ncurses.test", "ncurses-doc", Path("/usr/share/doc/ncurses-doc/html/man")),
    # Hypothesis: a Python property-based testing library's guides, strategies and
    # settings references and its 0.85 MB changelog (Sphinx).
    DocSite("hypothesis.test", "python-hypothesis-doc",
            Path("/usr/share/doc/python-hypothesis-doc/html")),
    # The SystemTap Beginners Guide: a DocBook guide, a section a page, most of 3 to 12 kB,
    # its example scripts on pages of their own; the tapset reference beside it left out.
    DocSite("systemtap.test", "systemtap-doc",
            Path("/usr/share/doc/systemtap-doc/SystemTap_Beginners_Guide")),
    # LMDB: a key-value store's C API reference made by doxygen (its functions, flags and
    # return codes grouped a page each, its source files); /search/ is doxygen's script
    # search, kept out as a build by-product.
    DocSite("lmdb.test", "lmdb-doc", Path("/usr/share/doc/lmdb-doc/html"),
            (*DEFAULT_DISALLOW, "/search/")),
    # The ninth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Shorewall: a firewall's guides (hand-written HTML, a topic a page, some translated)
    # and its configuration files' reference, a file a page (manpages/, 44 pages), 163;
    # /images/ holds the diagrams' sources.
    DocSite("shorewall.test", "shorewall-doc", Path("/usr/share/doc/shorewall-doc/html"),
            (*DEFAULT_DISALLOW, "/images/")),
    # Courier: a mail server's man pages in HTML, a program, daemon or file format a page
    # (courierd, maildrop, maildirmake, dot-courier, ...), with its FAQ and guides, 77.
    DocSite("courier.test", "courier-doc", Path("/usr/share/doc/courier-doc/html")),
    # GNU m4: the macro processor's texinfo manual, a node a page (a builtin macro or a
    # topic), 105 pages; the m4 package's own docs would go to the same directory.
    DocSite("m4.test", "m4-doc", Path("/usr/share/doc/m4"), marker="index.html"),
    # cairo: a 2D graphics library's C API reference made by gtk-doc, a group of functions
    # and types a page (cairo_t, paths, surfaces, fonts), with its symbol indexes, 57.
    DocSite("cairo.test", "libcairo2-doc", Path("/usr/share/gtk-doc/html/cairo")),
    # Babel: a Python internationalization library's guides, command line and API
    # reference (Sphinx), 29 pages; its changelog is gzipped and not a page.
    DocSite("babel.test", "python-babel-doc", Path("/usr/share/doc/python-babel-doc/html")),
    # Ghostscript: the PostScript and PDF interpreter's manual (Sphinx from its hand-written
    # HTML): 35 pages, most of them long: its usage, devices, API and language bindings.
    DocSite("ghostscript.test", "ghostscript-doc", Path("/usr/share/doc/ghostscript/html")),
    # The tenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # ProFTPD: an FTP server's configuration directives, a module a page (modules/,
    # contrib/), with the directive list, how-tos and FAQ, hand-written HTML, 131.
    DocSite("proftpd.test", "proftpd-doc", Path("/usr/share/doc/proftpd-doc")),
    # GNU Aspell: the spell checker's user and developer manuals, texinfo, a node a page,
    # 100; no index.html, so the root is a listing of the two manuals.
    DocSite("aspell.test", "aspell-doc", Path("/usr/share/doc/aspell-doc")),
    # Cyrus IMAP: a mail server's installation guides and FAQ (hand-written HTML) and its
    # commands' and configuration files' man pages in HTML (man/), 95.
    DocSite("cyrus.test", "cyrus-doc", Path("/usr/share/doc/cyrus-doc/html")),
    # h5py: a Python HDF5 library's guide, high-level API and release notes (Sphinx), 43;
    # the low-level API beside it (../api/html) is linked from no page.
    DocSite("h5py.test", "python-h5py-doc", Path("/usr/share/doc/python-h5py-doc/html")),
    # OpenAFS: a distributed file system's Administration, User and Quick Start guides
    # (DocBook, a section a page, file names like HDRWQ192.html), 284, and protocol specs
    # made by doxygen that no page links to.
    DocSite("openafs.test", "openafs-doc", Path("/usr/share/doc/openafs-doc/html")),
    # Chez Scheme: a Scheme implementation's user's guide, a chapter a page, most long
    # (system.html 0.25 MB, io.html 0.23 MB), with its summary of forms and index, 24.
    DocSite("chezscheme.test", "chezscheme-doc", Path("/usr/share/doc/chezscheme-doc/html")),
    # The eleventh sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # H2O: an HTTP server's configuration directives, a group of directives a page
    # (configure/), with its install guide, FAQ and benchmarks, 30.
    DocSite("h2o.test", "h2o-doc", Path("/usr/share/doc/h2o"), marker="configure.html"),
    # GNU cflow: a C call-graph tool's texinfo manual, a node a page, 39; 22 are reached
    # from the root (the invocation's option nodes are linked from none).
    DocSite("cflow.test", "cflow-doc", Path("/usr/share/doc/cflow/html")),
    # libusb: a C library's API reference made by doxygen (a group of functions a page,
    # a struct a page, its guides on I/O, hotplug and caveats), 42.
    DocSite("libusb.test", "libusb-1.0-doc", Path("/usr/share/doc/libusb-1.0-doc/api-1.0")),
    # structlog: a Python logging library's guides and API reference (Sphinx), 22 pages
    # besides its module sources.
    DocSite("structlog.test", "python-structlog-doc",
            Path("/usr/share/doc/python-structlog-doc/html")),
    # crmsh: a cluster shell's web site as asciidoc HTML, a directory a page: its guides,
    # FAQ, news and its command reference, one long page for each of five versions, 34.
    DocSite("crmsh.test", "crmsh-doc", Path("/usr/share/doc/crmsh-doc/html")),
    # Xapian: a search library's hand-written guides (query parser, sorting, facets,
    # stemming, replication, ...), 26, and its C++ API made by doxygen (apidoc/), 298.
    DocSite("xapian.test", "xapian-doc", Path("/usr/share/doc/xapian-doc")),
    # The twelfth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Knot Resolver: a DNS resolver's configuration reference (Lua), a module or a group
    # of settings a page, with its quick start and upgrading notes (Sphinx), 63.
    DocSite("knot-resolver.test", "knot-resolver-doc", Path("/usr/share/doc/knot-resolver"),
            marker="index.html"),
    # GNU AutoGen: a program generator's texinfo manual (AutoGen, AutoOpts, its tools),
    # a node a page, 480; 76 of them only redirect to an anchor.
    DocSite("autogen.test", "autogen-doc", Path("/usr/share/doc/autogen/autogen.html")),
    # Fontconfig: a font library's developers reference (DocBook), a C function a page
    # with its overview and data types, 222.
    DocSite("fontconfig.test", "libfontconfig-doc",
            Path("/usr/share/doc/libfontconfig-dev/fontconfig-devel")),
    # Whoosh: a Python search library's guides and API reference, a module a page
    # (Sphinx), 61.
    DocSite("whoosh.test", "python-whoosh-doc", Path("/usr/share/doc/python-whoosh-doc/html")),
    # dblatex: a DocBook-to-LaTeX tool's manual (DocBook), its XSL parameters and
    # processing instructions a page each, and its release notes, 264; the root is a
    # directory listing of the two.
    DocSite("dblatex.test", "dblatex-doc", Path("/usr/share/doc/dblatex/xhtml")),
    # JSON-GLib: a JSON library's GObject API reference made by gi-docgen, a class,
    # method or function a page, 274.
    DocSite("json-glib.test", "libjson-glib-doc", Path("/usr/share/doc/json-glib-1.0")),
    # The thirteenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # awesome: a window manager's Lua API reference made by ldoc, a class or module a
    # page, with its configuration guides (the default rc.lua, themes, porting) and FAQ, 123.
    DocSite("awesome.test", "awesome-doc", Path("/usr/share/doc/awesome/doc")),
    # GNU Autoconf Archive: a collection of configure macros, its texinfo manual a macro a
    # node and a page, 587.
    DocSite("autoconf-archive.test", "autoconf-archive",
            Path("/usr/share/doc/autoconf-archive/html")),
    # FLAC: an audio codec's C and C++ API made by doxygen (modules, classes, structs,
    # headers) with its porting guides, 207.
    DocSite("flac.test", "libflac-doc", Path("/usr/share/doc/libflac-doc/api")),
    # Pika: a Python AMQP (RabbitMQ) client's guides, usage examples a page each and its
    # API reference (Sphinx), 51.
    DocSite("pika.test", "python-pika-doc", Path("/usr/share/doc/python-pika-doc/html")),
    # PLplot: a plotting library's manual (DocBook), chapters of small sections and its
    # API a function a page, 308.
    DocSite("plplot.test", "plplot-doc", Path("/usr/share/doc/plplot-doc/html")),
    # The Debian Policy Manual: a distribution's packaging rules, a chapter or appendix a
    # page (Sphinx), 27.
    DocSite("debian-policy.test", "debian-policy",
            Path("/usr/share/doc/debian-policy/policy.html")),
    # The fourteenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Kombu: a Python messaging library's user guide (connections, producers, consumers,
    # pools, serialization, failover), FAQ and API reference, a module a page (Sphinx),
    # 87.
    DocSite("kombu.test", "python-kombu-doc", Path("/usr/share/doc/python-kombu-doc/html")),
    # libssh: an SSH library's C API made by doxygen (a group of functions a page, its
    # classes and headers) with its tutorial a chapter a page, 164 (the PKCS #11 chapter is
    # linked only from doxygen's script menu); /search/ is doxygen's script search, kept
    # out as a build by-product.
    DocSite("libssh.test", "libssh-doc", Path("/usr/share/doc/libssh-dev/html"),
            (*DEFAULT_DISALLOW, "/search/")),
    # Maxima: a computer algebra system's texinfo manual, a node a page (the functions and
    # variables of a topic or a share package on one page), with the whole manual again on
    # one 5 MB page; the root has no index.html, so it is a listing, 385.
    DocSite("maxima.test", "maxima-doc", Path("/usr/share/doc/maxima-doc/html")),
    # libsoup: an HTTP library's GObject API made by gi-docgen, a class, method, property
    # or signal a page, with its client, TLS, thread-safety, server and porting guides,
    # 628.
    DocSite("libsoup.test", "libsoup-3.0-doc", Path("/usr/share/doc/libsoup-3.0")),
    # Xlib: the X11 client library's specifications in DocBook, each one page (the Xlib
    # C interface on 2.4 MB, the keyboard extension, the input method protocol, the locale
    # database) and a compose key chart a locale; libx11-dev's own files share the
    # directory, whose root is a listing, 78.
    DocSite("xlib.test", "libx11-doc", Path("/usr/share/doc/libx11-dev"),
            marker="libX11/libX11.html"),
    # GraphicsMagick: an image processing toolkit's web site, its gm utility's man pages
    # as HTML (the whole of it on one page, a subcommand a page; gm.html, the same on
    # 0.9 MB, is linked from no page), FAQ, guides and its Wand C API, 72.
    DocSite("graphicsmagick.test", "graphicsmagick",
            Path("/usr/share/doc/graphicsmagick/www")),
    # The fifteenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # gevent: a Python coroutine networking library's guides (the event loop, monkey
    # patching, configuration, DNS resolvers, monitoring), examples and API, a module a
    # page under /api/ (Sphinx), 97 (robots.txt keeps out its 45 highlighted sources).
    DocSite("gevent.test", "python-gevent-doc", Path("/usr/share/doc/python-gevent-doc/html")),
    # libpqxx: the C++ client library of PostgreSQL, its reference made by doxygen (a class
    # or a group a page, named a00923.html and the like, and the headers as source pages)
    # and its DocBook tutorial under /Tutorial/; the root is a listing, 300 (the group
    # page of notifications, a00263.html, is linked from no page).
    DocSite("libpqxx.test", "libpqxx-doc", Path("/usr/share/doc/libpqxx-doc/html")),
    # MIT/GNU Scheme: its reference, user, SOS and foreign function interface manuals,
    # texinfo, a node a page, each manual also whole on one page, 351.
    DocSite("mit-scheme.test", "mit-scheme-doc", Path("/usr/share/doc/mit-scheme-doc/html")),
    # libmm-glib: ModemManager's GLib client library, made by gtk-doc (DocBook): an object
    # a page (MMModem.html, MMSim.html, ...) with its contents and symbol indexes, 152.
    DocSite("libmm-glib.test", "libmm-glib-doc", Path("/usr/share/gtk-doc/html/libmm-glib")),
    # Tcllib: the Tcl standard library's man pages as HTML made by doctools, a package a
    # page under /html/ (aes.html, csv.html, ...), listed by category on the root page,
    # 425.
    DocSite("tcllib.test", "tcllib", Path("/usr/share/doc/tcllib")),
    # Pango: a text layout library's API made by gi-docgen, a class, method, function or
    # enumeration a page, in one directory per namespace (/Pango/, /PangoCairo/, ...) under
    # a root that is a listing, with its markup, fonts, rendering and bidi guides, 761.
    DocSite("pango.test", "libpango1.0-doc", Path("/usr/share/doc/libpango1.0-doc/reference")),
    # The sixteenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Open vSwitch: a virtual switch's tutorials, how-tos (QoS, VLANs, IPsec, sFlow, DPDK),
    # FAQ a topic a page, deep dives and its tools' man pages under /ref/ (Sphinx), 122.
    DocSite("openvswitch.test", "openvswitch-doc", Path("/usr/share/doc/openvswitch-doc/html")),
    # alsa-lib: the ALSA sound library's C API made by doxygen: the PCM, plugins,
    # configuration, mixer, sequencer and rawmidi overviews, a group of functions a page
    # (group___p_c_m___h_w___params.html, ...), structs and source files, 247 (the indexes
    # are reached only through doxygen's script menu); /search/ is its script search.
    DocSite("alsa.test", "libasound2-doc", Path("/usr/share/doc/libasound2/html"),
            (*DEFAULT_DISALLOW, "/search/")),
    # mailfromd: a mail filter's manual, texinfo, a chapter a page (the tutorial, the
    # filtering language, its library of 0.36 MB, the configuration, the MTAs, each tool),
    # 22; each node and anchor is also a small page redirecting into its chapter.
    DocSite("mailfromd.test", "mailfromd-doc", Path("/usr/share/doc/mailfromd/html")),
    # MPICH: the MPI library's man pages as HTML, a routine a page under /www3/
    # (MPI_Send.html, ...) and its commands under /www1/, listed on the root page; each
    # constant is also a small page (MPI_INT.htm) redirecting into Constants.html, 629
    # (MPI_Wtime.html and the full listing www3/index.htm are linked from no page).
    DocSite("mpich.test", "mpich-doc", Path("/usr/share/doc/mpich-doc/html")),
    # libadwaita: the GNOME widget library's API made by gi-docgen, a class, method,
    # property or signal a page, with its guides (styles and dark mode, named colors,
    # style classes, adaptive layouts, boxed lists, migrating from libhandy), 1,021.
    DocSite("libadwaita.test", "libadwaita-1-doc", Path("/usr/share/doc/libadwaita-1")),
    # YARD: the Ruby documentation tool's own documentation made by YARD: its README,
    # getting started guide, tags reference and architecture guides, and its API a class
    # or module a page under /YARD/, 275 (file.README.html, a copy of index.html, is linked
    # from no page).
    DocSite("yard.test", "yard-doc", Path("/usr/share/doc/yard/doc")),
    # The seventeenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # kitty: a GPU terminal emulator's Sphinx guides, its kitty.conf reference on one
    # 0.38 MB page, its FAQ, protocols and a kitten (plugin) a page under /kittens/, 52.
    DocSite("kitty.test", "kitty-doc", Path("/usr/share/doc/kitty/html")),
    # RapidJSON: a C++ JSON library's guides (tutorial, DOM, SAX, streams, pointer, schema,
    # FAQ) written in Markdown and its API, both made by doxygen, 217; /zh-cn/ is the same
    # site in Chinese and /search/ its script search.
    DocSite("rapidjson.test", "rapidjson-doc", Path("/usr/share/doc/rapidjson-doc/html"),
            (*DEFAULT_DISALLOW, "/search/", "/zh-cn/")),
    # FreeTDS: the client libraries for Sybase and Microsoft SQL Server, its user guide in
    # DocBook, a section a page (installation, freetds.conf, ODBC, troubleshooting), 87.
    DocSite("freetds.test", "freetds-doc", Path("/usr/share/doc/freetds-doc/userguide")),
    # GtkSourceView: the GTK source code editing widget's API made by gi-docgen, a class,
    # method, property or signal a page, with its language definition, style scheme and
    # snippet file format references and its porting guides, 741.
    DocSite("gtksourceview.test", "libgtksourceview-5-doc",
            Path("/usr/share/doc/gtksourceview5")),
    # FreeType: the font engine's hand-written overview, FAQ, tutorial, design and glyph
    # conventions pages, and its API reference made by docwriter with MkDocs, a section a
    # page under /reference/, 78 (the directory also holds libfreetype-dev's own files).
    DocSite("freetype.test", "freetype2-doc", Path("/usr/share/doc/libfreetype-dev"),
            marker="documentation.html"),
    # SWIG: the interface compiler's hand-written HTML manual, a chapter a page (SWIG.html,
    # Typemaps.html, a target language a page: Python.html 0.5 MB, ...), and the whole
    # manual again on one page (SWIGDocumentation.html, 2.4 MB), 44.
    DocSite("swig.test", "swig4.0-doc", Path("/usr/share/doc/swig4.0-doc/Manual")),
    # The eighteenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Qt's tools: the Qt Designer, Linguist, Assistant, Help and UI Tools manuals and the
    # QDoc manual, made by qdoc, a topic, class or command group a page, 191; the root and
    # each manual's directory have no index.html, so they are listings (the directory is
    # shared by every Qt 5 documentation package).
    DocSite("qttools.test", "qttools5-doc-html", Path("/usr/share/qt5/doc"),
            marker="qtdesigner/qtdesigner-manual.html"),
    # Xen: the hypervisor's man pages as HTML (xl, xl.cfg with every guest option, ...),
    # its Markdown guides and feature pages (the boot command line on one 0.18 MB page) and
    # its public C headers as hyperlinked HTML under /hypercall/ (208), 295.
    DocSite("xen.test", "xen-doc", Path("/usr/share/doc/xen/html")),
    # Request Tracker: the issue tracker's guides, its utilities' and its Perl modules'
    # POD as HTML, a page each (RT/Action/LinearEscalate.html, ...), none with a title,
    # RT_Config.html with every setting on one page, 317.
    DocSite("rt.test", "rt5-doc-html", Path("/usr/share/doc/rt5-doc-html")),
    # UDisks: the disk manager's D-Bus interfaces, its client library's C API and its man
    # pages, made by gtk-doc, an interface or class a page, 118.
    DocSite("udisks.test", "udisks2-doc", Path("/usr/share/gtk-doc/html/udisks2")),
    # hwloc: the hardware topology library's guides (FAQ, environment variables, tools) and
    # its C API a group a page, made by doxygen with pages named a00166.html, 138.
    DocSite("hwloc.test", "libhwloc-doc", Path("/usr/share/doc/libhwloc-dev/html")),
    # peewee: a small Python ORM's guides and API reference (Sphinx; api.html 0.6 MB), 21.
    DocSite("peewee.test", "python-peewee-doc",
            Path("/usr/share/doc/python-peewee-doc/html")),
    # The nineteenth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # xonsh: the Python-powered shell's guides, tutorials, environment variable reference
    # (envvars.html) and API (Sphinx), 231 (84 of them source pages under /_modules/).
    DocSite("xonsh.test", "xonsh-doc", Path("/usr/share/doc/xonsh-doc/html")),
    # SFML: the multimedia library's C++ API made by doxygen, a class a page with a usage
    # example, every page titled "SFML - Simple and Fast Multimedia Library", 411.
    DocSite("sfml.test", "libsfml-doc", Path("/usr/share/doc/libsfml-dev/html")),
    # Asymptote: the vector graphics language's manual made by texinfo, a section a page,
    # with a stub page redirecting each index entry (circle.html, ...), 147.
    DocSite("asymptote.test", "asymptote-doc", Path("/usr/share/doc/asymptote/html")),
    # MPlayer: the movie player's English manual made from DocBook, a section a page, the
    # FAQ on one page (the package's nine translations are not served), 86.
    DocSite("mplayer.test", "mplayer-doc", Path("/usr/share/doc/mplayer/HTML/en")),
    # POV-Ray: the ray tracer's Unix guide, tutorial and reference exported from its wiki,
    # a chapter section a page (r3_4.html, the scene elements, 0.8 MB), each titled by
    # its number ("Reference Section 4"), 21.
    DocSite("povray.test", "povray-doc", Path("/usr/share/doc/povray/html")),
    # VTE: the terminal widget's C API made by gi-docgen, a method, property, signal or
    # enumeration a page, 273.
    DocSite("vte.test", "libvte-2.91-doc", Path("/usr/share/doc/vte-2.91"),
            marker="index.html"),
    # The twentieth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # IPython: the interactive shell's guides, configuration, extensions and kernel pages
    # (Sphinx; the magics and options pages are left empty in this build), 84.
    DocSite("ipython.test", "python-ipython-doc",
            Path("/usr/share/doc/python-ipython-doc/html")),
    # TagLib: the audio tag library's C++ API made by doxygen, a class a page
    # (classTagLib_1_1MPEG_1_1File.html, ...) and its headers as source pages, 614.
    DocSite("taglib.test", "libtag1-doc", Path("/usr/share/doc/libtag1-dev/html")),
    # HarfBuzz: the text shaping engine's manual (shaping, clusters, fonts, integration)
    # and its C API a header a page (harfbuzz-hb-buffer.html, ...), made by gtk-doc, 93.
    DocSite("harfbuzz.test", "libharfbuzz-doc", Path("/usr/share/gtk-doc/html/harfbuzz")),
    # libtorrent: the BitTorrent library's hand-written reStructuredText manual and
    # reference a topic a page (reference-Settings.html, ...), every page titled
    # "libtorrent"; single-page-ref.html repeats the reference on one 1.2 MB page, 51.
    DocSite("libtorrent.test", "libtorrent-rasterbar-doc",
            Path("/usr/share/doc/libtorrent-rasterbar-doc/html")),
    # Augeas: the configuration editing tool's lens reference (a lens a page,
    # lenses/files/sshd-aug.html, ...) and its C API on one page, made by Natural Docs;
    # each part's index.html a meta refresh into it, the root a listing; its search
    # result pages disallowed, 462 (142 of them under /lenses/search/ and /c_api/search/).
    DocSite("augeas.test", "augeas-doc", Path("/usr/share/doc/augeas-doc"),
            DEFAULT_DISALLOW + ("/lenses/search/", "/c_api/search/"),
            marker="lenses/index.html"),
    # WirePlumber: the PipeWire session manager's guides and Lua configuration reference
    # (configuration/alsa.html, ...), its Lua API and its C API (Sphinx with breathe), 65.
    DocSite("wireplumber.test", "wireplumber-doc", Path("/usr/share/doc/wireplumber/html")),
    # The twenty-first sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Gammu: the mobile phone tool's Sphinx manual (its SMS daemon, configuration, FAQ,
    # phone protocols, python-gammu and the libGammu C API a topic a page), 117.
    DocSite("gammu.test", "gammu-doc", Path("/usr/share/doc/gammu/html")),
    # IBus: the input method framework's C API made by gtk-doc, a class a page
    # (IBusEngine.html, ...), a header a page and six short chapters, 43.
    DocSite("ibus.test", "ibus-doc", Path("/usr/share/doc/ibus/html")),
    # Kyoto Cabinet: the DBM's hand-written specification on one long page (spex.html),
    # its command-line tools on another, and its C++ API made by doxygen under api/, 255.
    DocSite("kyotocabinet.test", "kyotocabinet-doc", Path("/usr/share/doc/kyotocabinet-doc/doc"),
            marker="spex.html"),
    # libmongoc: the MongoDB C driver's Sphinx guides and API, a function a page
    # (mongoc_client_new.html, ...), 691.
    DocSite("mongoc.test", "libmongoc-doc", Path("/usr/share/doc/libmongoc-dev/html")),
    # SQLObject: the Python ORM's docutils guides (SQLObject.html, SelectResults.html, ...)
    # and its API made by Sphinx autodoc a module a page under api/, 120 (45 of them source
    # pages under the disallowed /_modules/).
    DocSite("sqlobject.test", "python-sqlobject-doc",
            Path("/usr/share/doc/python-sqlobject-doc/html")),
    # SimPy 2: the process simulation library's manuals and bank tutorials (Sphinx), a
    # manual a page, 33.
    DocSite("simpy.test", "python-simpy-doc", Path("/usr/share/doc/python-simpy-doc/html")),
    # The twenty-second sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # H2: the Java SQL database's API made by javadoc, a class a page
    # (org/h2/tools/Server.html, ...), with its package, tree and index pages, 135.
    DocSite("h2.test", "libh2-java-doc", Path("/usr/share/doc/libh2-java/api")),
    # Calendar: an OCaml date and time library's API made by odoc, a module or module type
    # a page, each an index.html in its own directory (calendar/CalendarLib/Date/), 84 (14
    # of them, the CalendarLib__* alias pages, linked from no page).
    DocSite("ocaml-calendar.test", "libcalendar-ocaml-doc",
            Path("/usr/share/doc/libcalendar-ocaml/_html")),
    # Scheme 48: the Scheme implementation's reference manual made by tex2page, a chapter a
    # page titled only by the manual's name (manual-Z-H-5.html, ...); the root a listing, 12.
    DocSite("scheme48.test", "scheme48-doc", Path("/usr/share/doc/scheme48/html"),
            marker="manual.html"),
    # Vala: the programming language's reference manual, a chapter a page (Classes.html,
    # Attributes.html, ...), installed as a devhelp book, 19.
    DocSite("vala.test", "vala-0.56-doc", Path("/usr/share/devhelp/books/vala-0.56")),
    # GNU CLISP: the Common Lisp implementation's notes on one 3.7 MB page (impnotes.html,
    # DocBook) and the clisp and clisp-link man pages; the root a listing, 3.
    DocSite("clisp.test", "clisp-doc", Path("/usr/share/doc/clisp/doc"),
            marker="impnotes.html"),
    # GNATColl: the Ada component collection's Sphinx manual, a package a chapter
    # (traces.html, vfs.html, ...), 26.
    DocSite("gnatcoll.test", "libgnatcoll-doc", Path("/usr/share/doc/libgnatcoll-doc/html")),
    # The twenty-third sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # execline: the scripting language's hand-written pages, a command a page (ifelse.html,
    # forbacktickx.html, ...), 62.
    DocSite("execline.test", "execline-doc", Path("/usr/share/doc/execline"),
            marker="index.html"),
    # cc65: the 6502 C compiler's manuals made by LinuxDoc-Tools, a tool or target machine a
    # page (ca65.html, ld65.html, c64.html, funcref.html, ...), 48.
    DocSite("cc65.test", "cc65-doc", Path("/usr/share/doc/cc65/html")),
    # mod_perl 2: the Apache module's user and developer guides and its Perl API made by
    # pod2html, a module a page (docs/2.0/api/Apache2/RequestRec.html, ...); the root an
    # index titled "NAME", 107.
    DocSite("modperl.test", "libapache2-mod-perl2-doc",
            Path("/usr/share/doc/libapache2-mod-perl2-doc"), marker="index.html"),
    # Asciidoctor: the Ruby text processor's API made by RDoc, a class or module a page
    # (Asciidoctor/Extensions/Registry.html, ...), 111.
    DocSite("asciidoctor.test", "asciidoctor-doc", Path("/usr/share/doc/asciidoctor-doc/html")),
    # Gambit: the Scheme compiler's texinfo manual on one 1.6 MB page (gambit.html) and an
    # example's page; the root a listing, 2.
    DocSite("gambit.test", "gambc-doc", Path("/usr/share/doc/gambc"), marker="gambit.html"),
    # dbus-python: the D-Bus binding's Sphinx tutorial and API, a module a page
    # (tutorial.html, dbus.service.html, ...), 22.
    DocSite("dbus-python.test", "python-dbus-doc", Path("/usr/share/doc/python-dbus-doc/html")),
    # The twenty-fourth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # {fmt}: the C++ formatting library's Sphinx manual with its API made by breathe from
    # doxygen, four pages (syntax.html, api.html, ...), 7.
    DocSite("fmt.test", "libfmt-doc", Path("/usr/share/doc/libfmt-doc"), marker="index.html"),
    # libtool: the GNU libtool manual, texinfo, on one 0.56 MB page (libtool.html); the root
    # a listing, 1.
    DocSite("libtool.test", "libtool-doc", Path("/usr/share/doc/libtool-doc"),
            marker="libtool.html"),
    # CUnit: the C unit testing framework's hand-written user guide, a chapter a page
    # (writing_tests.html, running_tests.html, ...), 8.
    DocSite("cunit.test", "libcunit1-doc", Path("/usr/share/doc/libcunit1-doc/html")),
    # Jansson: the C JSON library's Sphinx manual, its whole API on one page (apiref.html)
    # beside a tutorial and notes, 10.
    DocSite("jansson.test", "libjansson-doc", Path("/usr/share/doc/libjansson-dev/html")),
    # attrs: the Python class library's Sphinx guide and API reference (init.html,
    # hashing.html, api.html, ...), 17.
    DocSite("attrs.test", "python-attr-doc", Path("/usr/share/doc/python-attr-doc/html")),
    # JOpt Simple: the Java command line parser's API made by javadoc, a class a page
    # (joptsimple/OptionParser.html, joptsimple/util/KeyValuePair.html, ...), 80.
    DocSite("jopt-simple.test", "libjoptsimple-java-doc",
            Path("/usr/share/doc/libjoptsimple-java/api"), marker="index.html"),
    # The twenty-fifth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # PuTTY: the SSH client's user manual made by Halibut, a chapter or appendix a page
    # (Chapter4.html, every configuration panel on 0.23 MB; AppendixA.html, the FAQ; ...), 20.
    DocSite("putty.test", "putty-doc", Path("/usr/share/doc/putty-doc")),
    # ELinks: the text browser's manual made by AsciiDoc on one 0.19 MB page (manual.html)
    # beside its hacking guide and Perl pages made by pod2html; the root a listing, 4.
    DocSite("elinks.test", "elinks-doc", Path("/usr/share/doc/elinks"), marker="manual.html"),
    # FFTW: the Fourier transform library's manual, texinfo, a node a page under /html/
    # (Planner-Flags.html, Wisdom-Export.html, ...), and its FAQ a section a page under
    # /fftw-faq.html/; the root a listing, 124.
    DocSite("fftw.test", "libfftw3-doc", Path("/usr/share/doc/libfftw3-dev"),
            marker="html/index.html"),
    # PropEr: the Erlang property-based testing tool's API made by EDoc, a module a page
    # (proper.html, proper_types.html, proper_statem.html, ...), the root a frameset, 16.
    DocSite("proper.test", "erlang-proper-doc", Path("/usr/share/doc/erlang-proper-doc/edoc")),
    # Mako: the Python template library's Sphinx manual, a chapter a page (syntax.html,
    # inheritance.html, filtering.html, ...), 12.
    DocSite("mako.test", "python-mako-doc", Path("/usr/share/doc/python-mako-doc/html")),
    # LAME: the MP3 encoder's hand-written pages (usage.html, detailed.html with every
    # command-line switch, vbr.html, history.html, ...), 14.
    DocSite("lame.test", "lame-doc", Path("/usr/share/doc/lame-doc/html")),
    # The twenty-sixth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # Zarith: the OCaml arbitrary-precision integer and rational library's API made by
    # ocamldoc, a module a page (Z.html, Q.html, Big_int_Z.html) with its index pages, 19.
    DocSite("zarith.test", "libzarith-ocaml-doc",
            Path("/usr/share/doc/libzarith-ocaml-dev/doc/html")),
    # uriparser: the C URI parsing library's API made by doxygen, a header or struct a page
    # (Uri_8h.html, UriBase_8h.html, ...), its tutorial on the main page (index.html), 77.
    DocSite("uriparser.test", "liburiparser-doc", Path("/usr/share/doc/liburiparser-doc/html")),
    # DebianDoc-SGML: the Debian SGML DTD's manual made by debiandoc2html, a chapter or
    # appendix a page (ch-inline.en.html, ap-entities.en.html, ...; index.html a symlink to
    # index.en.html), 13.
    DocSite("debiandoc.test", "debiandoc-sgml-doc",
            Path("/usr/share/doc/debiandoc-sgml-doc/debiandoc-sgml.html")),
    # PLY: the Python lex and yacc's hand-written manual on one 0.11 MB page (ply.html)
    # beside its internals (internal.html); the root a listing (with the examples'
    # directories), 2.
    DocSite("ply.test", "python-ply-doc", Path("/usr/share/doc/python-ply-doc")),
    # bzip2: the compressor's and libbzip2's manual made by the DocBook XSL stylesheets on
    # one 0.13 MB page (manual.html); the root a listing, 1.
    DocSite("bzip2.test", "bzip2-doc", Path("/usr/share/doc/bzip2"), marker="manual.html"),
    # Go: the language specification (go_spec.html, 0.26 MB), its pre-generics version
    # (go1.17_spec.html, a near-copy), the memory model and the assembler guide, the web
    # site's page templates served raw: no <title>, the title in a JSON comment; the root
    # a listing, 4.
    DocSite("golang.test", "golang-1.19-doc", Path("/usr/share/doc/golang-1.19-doc/html")),
    # The twenty-seventh sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # RubyMail: the Ruby mail library's API made by RDoc (Darkfish), a class or module a
    # page (RMail/Header.html, RMail/Message.html, ...), with its guide (guide/Intro_txt.html)
    # and README, 23.
    DocSite("rubymail.test", "ruby-rubymail-doc",
            Path("/usr/share/doc/ruby-rubymail-doc/html")),
    # LuaSQL: the Lua database library's hand-written pages (manual.html: every object and
    # method and each driver's extensions on one page; examples, history, license), its
    # English tree only (us/; the package installs Portuguese and French trees beside it), 5.
    DocSite("luasql.test", "lua-sql-doc", Path("/usr/share/doc/lua-sql-doc/us")),
    # Allegro 4: the game programming library's manual made by its own makedoc tool, a
    # chapter of functions a page (alleg000.html .. alleg048.html), with the FAQ, the
    # help guide, the tools' and file formats' pages and a 0.24 MB changelog, 70.
    DocSite("allegro.test", "allegro4-doc", Path("/usr/share/doc/allegro4-doc/html")),
    # Bisonc++: the C++ parser generator's user guide made by Yodl, a chapter a page
    # (bisonc++04.html: every directive on 0.12 MB), bisonc++.html the contents; no
    # index.html, so the root is a listing (with the rpn demo's directory), 11.
    DocSite("bisoncpp.test", "bisonc++-doc", Path("/usr/share/doc/bisonc++-doc/manual")),
    # Gri: the scientific graphing language's manual made by its own texinfo-to-HTML
    # script, a node a page (each command: Regress.html, Convert.html, ...; the concepts,
    # the FAQ, the example scripts), 205.
    DocSite("gri.test", "gri-html-doc", Path("/usr/share/doc/gri/html")),
    # GI-DocGen: the GObject API reference generator's own manual (Sphinx, docutils 0.19):
    # the tutorial, the project configuration, linking by name, the templates and each
    # command a page under tools/, 13.
    DocSite("gidocgen.test", "gi-docgen-doc", Path("/usr/share/doc/gi-docgen/html")),
    # The twenty-eighth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # CFITSIO: the FITS file library's three manuals made by HEVEA from LaTeX, a chapter a
    # page (cfitsio/: the C user's guide, cfitsio006.html every basic routine on 0.15 MB;
    # fitsio/: the Fortran guide; quick/: the quick start); the root is a listing, 41.
    DocSite("cfitsio.test", "libcfitsio-doc", Path("/usr/share/doc/libcfitsio-dev"),
            marker="cfitsio/index.html"),
    # ETSF_IO: the Fortran 90 library's API made by ROBODoc, a source file a page
    # (group_level/etsf_io_main_get_f90.html, low_level/read_routines_f90.html, ...), its
    # tutorials, the etsf_io tool's page and ROBODoc's index pages, 80.
    DocSite("etsf-io.test", "libetsf-io-doc", Path("/usr/share/doc/libetsf-io-doc")),
    # GNUstep Base: the Objective-C library's class reference made by autogsdoc, a class a
    # page (Developer/Base/Reference/NSArray.html, ...; each reference's index.html a
    # frameset), its additions' and tools' references and the Base programming manual
    # (texinfo); the root links to GNUstep manuals not installed; the coding standards and
    # the autogsdoc page are reached only through broken links, 187.
    DocSite("gnustep.test", "gnustep-base-doc", Path("/usr/share/GNUstep/Documentation"),
            marker="Developer/Base/Reference/index.html"),
    # botch: the Debian bootstrapping toolchain's wiki pages converted from Markdown, HTML
    # fragments without <html>, <head> or <title> (Tools.html, Terminology.html, ...); the
    # root is a listing, 6.
    DocSite("botch.test", "botch-doc", Path("/usr/share/doc/botch/wiki")),
    # ESDL: the Erlang SDL binding's API made by EDoc, a module a page (sdl_video.html,
    # sdl_events.html, sdl_ttf.html, ...) with its introduction, 12.
    DocSite("esdl.test", "erlang-esdl-doc", Path("/usr/share/doc/erlang-esdl-doc/html")),
    # The DocBook DSSSL stylesheets' documentation made by Jade with the stylesheets
    # themselves (upper-case HTML 4): the guide, and each HTML and print parameter and
    # library function a page under /html/, /print/ and /lib/, 436.
    DocSite("dsssl.test", "docbook-dsssl-doc", Path("/usr/share/doc/docbook-dsssl-doc/doc")),
    # The twenty-ninth sealed set (harness.relevance.SEALED_SETS): six more kinds of manual.
    # bup: the backup tool's man pages written in Markdown and made HTML by pandoc, a
    # command a page (bup-save.1.html, bup-restore.1.html, ...); the root is a listing, 39.
    DocSite("bup.test", "bup-doc", Path("/usr/share/doc/bup"), marker="bup.1.html"),
    # pgBackRest: the PostgreSQL backup tool's site made by its own documentation tool from
    # XML: the user guide (0.23 MB), every command's options (command.html, 0.94 MB), every
    # configuration option (configuration.html), the FAQ, the release notes and metrics, 8.
    DocSite("pgbackrest.test", "pgbackrest-doc", Path("/usr/share/doc/pgbackrest-doc/html")),
    # folks: the contacts aggregation library's Vala API made by valadoc, a namespace,
    # class, interface, method, property or signal a page (Folks.Individual.html,
    # Folks.IndividualAggregator.prepare.html, ...), its root index.htm; the root is a
    # listing, 486.
    DocSite("folks.test", "libfolks-doc", Path("/usr/share/devhelp/books/folks")),
    # syn: the Rust crates cargo builds with, their API made by rustdoc, an item a page
    # (syn/struct.DeriveInput.html, syn/macro.parse_macro_input.html, quote/macro.quote.html,
    # proc_macro2, ...) and their source pages under src/; the root is a listing, 671.
    DocSite("syn.test", "cargo-doc", Path("/usr/share/doc/cargo/doc")),
    # THE: The Hessling Editor's reference made by its own script from its sources: the
    # commands (comm.html), the SET commands (commset.html), the SOS commands, the query
    # and EXTRACT items, the quick reference, the glossary and the appendices, 17.
    DocSite("the-editor.test", "the-doc", Path("/usr/share/doc/the/html")),
    # The SGI Standard Template Library's hand-written reference: a concept, container,
    # algorithm, iterator or function object a page (lower_bound.html, Vector.html,
    # ForwardIterator.html, ...), with its index, table of contents and design notes, 236.
    DocSite("stl.test", "stl-manual", Path("/usr/share/doc/stl-manual/html")),
    # A mirror: a second host serving a copy of the PostgreSQL manual, as mirrors do.
    DocSite("pgdocs-mirror.test", "postgresql-doc-15",
            Path("/usr/share/doc/postgresql-doc-15/html"), mirror_of="postgresql.test"),
)


def available_doc_sites(sites: tuple[DocSite, ...] = DOC_SITES) -> list[DocSite]:
    """The sites whose package is installed."""
    return [site for site in sites if site.installed]


@register
class DocSiteHost(HostKind):
    """Serves the files under one directory, unchanged, as one host.

    ``/robots.txt`` disallows the site's ``disallow`` paths; a directory URL without a
    trailing slash redirects (301) to one; a directory serves its ``index.html`` or else a
    listing of its HTML files and subdirectories; ``..`` and symlinks leading out of
    ``/usr/share`` are 404.
    """

    kind = "docsite"

    def __init__(self, web: Web, site: DocSite):
        super().__init__(web, site.host)
        self.site = site
        self.root = site.root.resolve()

    def robots_txt(self) -> str:
        """The robots.txt of this site."""
        lines = ["User-agent: *", *(f"Disallow: {path}" for path in self.site.disallow)]
        return "\n".join(lines) + "\n"

    def handle(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, {"Allow": "GET, HEAD"})
        path = unquote(request.path)
        if path == "/robots.txt":
            return text_response(self.robots_txt())
        target = self.resolve(path)
        if target is None:
            return not_found(path)
        if target.is_dir():
            if not path.endswith("/"):
                return Response(301, {"Location": self.url(quote(path) + "/")})
            index = target / "index.html"
            if index.is_file():
                return self._file(index)
            return self._listing(path, target)
        return self._file(target)

    def resolve(self, path: str) -> Path | None:
        """The file or directory a URL path names, or None if it does not exist or escapes."""
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") or "\x00" in p for p in parts):
            return None
        candidate = self.root.joinpath(*parts)
        if not candidate.exists():
            return None
        real = candidate.resolve()
        if not (real.is_relative_to(self.root) or real.is_relative_to(SHARED_ROOT)):
            return None
        return candidate

    def _file(self, path: Path) -> Response:
        ctype, encoding = mimetypes.guess_type(path.name)
        if encoding or ctype is None:
            ctype = "application/octet-stream"
        elif ctype == "text/html":
            ctype = HTML_TYPE
        elif ctype.startswith("text/") or ctype in ("application/javascript",):
            ctype += "; charset=utf-8"
        return Response(200, {"Content-Type": ctype}, path.read_bytes())

    def _listing(self, path: str, directory: Path) -> Response:
        entries = []
        for child in sorted(directory.iterdir()):
            if child.name.startswith("."):
                continue
            if child.is_dir():
                entries.append(child.name + "/")
            elif child.suffix in (".html", ".htm"):
                entries.append(child.name)
        items = "\n".join(
            f'<li><a href="{quote(name)}">{html.escape(name)}</a></li>' for name in entries
        )
        title = f"Index of {html.escape(path)}"
        body = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
                f"</head>\n<body><h1>{title}</h1>\n<ul>\n{items}\n</ul>\n</body></html>\n")
        return Response(200, {"Content-Type": HTML_TYPE}, body.encode())
