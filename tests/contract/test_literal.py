"""Never fewer answers than the words allow (index/plan.py): a query pasted from a terminal
falls back to its literal reading, identifiers match whole and as the phrase of their
parts, and the any-word fallback finds every page plain any-word BM25 finds."""

from __future__ import annotations

import pytest

from index.query import parse
from tests.contract.conftest import doc, holding, others, urls

PAGES = [
    doc("http://w.test/tshark", "tshark manual",
        "Read packets with tshark -r capture.pcap -Y http and print the matching ones."),
    doc("http://w.test/ping", "ping manual",
        "Send many probes: ping -c 1000 host stops after 1000 replies."),
    doc("http://w.test/shell", "Shell expansions",
        "Strip a suffix with $(basename $file .txt) inside a loop."),
    doc("http://w.test/sysctl", "Kernel parameters",
        "Enable routing: net.ipv4.ip_forward = 1 in sysctl.conf."),
    doc("http://w.test/proc", "The proc tree",
        "Read /proc/sys/net/ipv4/ip_forward to see whether routing is on."),
    doc("http://w.test/git", "Git configuration",
        "Set your name with git config --global user.name and check it."),
    doc("http://w.test/apache", "Apache directives",
        "The AllowOverride directive says which directives .htaccess files may set."),
    doc("http://w.test/filters", "Display filters", "Filters select packets by field."),
    doc("http://w.test/linking", "Linking", "Link both libraries: gcc myprog.c -lmpfr -lgmp"),
]


@pytest.fixture(scope="module")
def pasted(corpus):
    holding(corpus, PAGES)
    return corpus


@pytest.mark.parametrize("query, page", [
    # an option past the command's words, alone: "-Y" read as an exclusion first
    ("tshark capture.pcap -Y http", "http://w.test/tshark"),
    ("ping host -c", "http://w.test/ping"),
    # a file name, then options glued to their values: not exclusions of "lmpfr"
    ("gcc myprog.c -lmpfr -lgmp", "http://w.test/linking"),
])
def test_a_pasted_command_line_is_read_literally(pasted, query, page):
    found = pasted.search(query)
    assert urls(found)[:1] == [page], query
    assert found.extra.get("reading") == "literal"


def test_a_short_option_right_after_a_command_is_an_option(backend):
    # "cmp -l" is cmp's option, not "cmp" without "l": read as an exclusion it leaves
    # enough other pages that the literal reading would never run, and loses the answer
    holding(
        backend,
        [doc("http://d.test/invoking-cmp", "Invoking cmp",
             "cmp -l prints the byte number and the values of each differing byte")]
        + others("d.test", "Comparing files", "cmp compares two files"),
    )
    found = backend.search("cmp -l")
    assert urls(found) == ["http://d.test/invoking-cmp"]


def test_a_short_option_after_a_command_given_by_its_path_is_an_option(backend):
    # a script's first line names its interpreter by its path: "#!/command/execlineb -P"
    # is execlineb's option, not the path without "p", which leaves the pages holding the
    # path but not the option and drops the page documenting it
    holding(backend, [
        doc("http://e.test/execlineb", "execlineb",
            "Start a script with #!/command/execlineb -P to read no arguments: -P skips "
            "the push."),
        *[doc(f"http://e.test/prog{n}", f"prog{n}",
              f"A script of prog{n} starts with #!/command/execlineb and then its words.")
          for n in range(4)],
    ])
    found = backend.search("#!/command/execlineb -P")
    assert urls(found)[:1] == ["http://e.test/execlineb"]


def test_a_command_given_by_its_path_is_read_by_its_name(backend):
    # "#!/command/execlineb -P" asks for execlineb's page, titled by the command's name:
    # read as the phrase "command execlineb", the pages of scripts starting so rank first
    holding(backend, [
        doc("http://x.test/execlineb.html", "the execlineb command",
            "execlineb reads a script. Scripts start with #!/command/execlineb "
            "[ -qwWpPS ]. The -P option bypasses positional parameters."),
        *[doc(f"http://x.test/prog{n}.html", f"pushing the environment {n}",
              f"#!/command/execlineb -P\nemptyenv -P\n#!/command/execlineb -P\n"
              f"prog{n} is run by #!/command/execlineb -P and emptyenv -P.")
          for n in range(3)],
    ])
    found = backend.search("#!/command/execlineb -P")
    assert urls(found)[:1] == ["http://x.test/execlineb.html"]


@pytest.mark.parametrize("query, page", [
    ("tshark -r capture.pcap -Y http", "http://w.test/tshark"),
    ("ping host -c 1000", "http://w.test/ping"),
])
def test_a_command_line_with_its_options_is_read_as_words(pasted, query, page):
    found = pasted.search(query)
    assert urls(found)[:1] == [page], query
    assert found.extra.get("reading") != "literal"  # read so at once, not as a fallback


def test_a_short_option_after_another_or_given_a_number_is_an_option(backend):
    # "-l" after "-A", "-crf" given 23: a command line's options; read as exclusions of
    # "l" and "crf" they drop the pages documenting them while the others still match, so
    # the literal reading never runs
    holding(
        backend,
        [doc("http://c.test/workers", "Workers guide",
             "Start a worker: celery -A proj worker -l INFO prints its log at level INFO"),
         doc("http://c.test/codecs", "Codecs",
             "Encode with libx264 -crf 23: crf sets the quality, 23 by default")]
        + others("c.test", "celery worker",
                 "celery runs proj tasks in a worker; info on libx264 encoding: 23 presets"),
    )
    assert urls(backend.search("celery -A proj worker -l INFO"))[:1] == [
        "http://c.test/workers"]
    assert urls(backend.search("libx264 -crf 23"))[:1] == ["http://c.test/codecs"]


def test_a_call_finds_the_page_documenting_its_function(backend):
    # "cairo_pattern_add_color_stop_rgb(pat, 0, 1, 1, 1)": the function's name glued to
    # its first argument was one phrase, "... rgb pat", that no page holds, and the pages
    # holding only "0" and "1" ranked first; the name is a word of its own
    holding(
        backend,
        [doc("http://g.test/pattern", "cairo_pattern_t",
             "void cairo_pattern_add_color_stop_rgb (cairo_pattern_t *pattern, double "
             "offset, double red, double green, double blue); adds a color stop at an "
             "offset from 0 to 1. Example: pat = cairo_pattern_create_linear (0, 0, 1, 1);")]
        + [doc(f"http://g.test/index-1.{n}", f"Index of new symbols in 1.{n}",
               f"version 1.{n}.0: cairo_pattern_t pat 1 0 new symbols") for n in range(4)],
    )
    found = urls(backend.search("cairo_pattern_add_color_stop_rgb(pat, 0, 1, 1, 1)"))
    assert found[:1] == ["http://g.test/pattern"]


def test_a_calls_arguments_are_the_users_own_values(backend):
    # "json_generator_set_pretty (gen, TRUE)": the page documenting the function names
    # neither "gen" nor "TRUE"; required, they left it to the any-word pages, after a
    # page lacking only "gen" and pages lacking the function's name
    holding(
        backend,
        [doc("http://j.test/method.Generator.set_pretty", "Json.Generator.set_pretty",
             "void json_generator_set_pretty (JsonGenerator* generator, gboolean "
             "is_pretty) Sets whether the generated JSON should be pretty printed."),
         doc("http://j.test/method.Generator.get_pretty", "Json.Generator.get_pretty",
             "gboolean json_generator_get_pretty (JsonGenerator* generator) Retrieves the "
             "value set using json_generator_set_pretty(). Returns TRUE if the generated "
             "JSON should be pretty-printed.")]
        + [doc(f"http://a.test/opt-{n}", f"Option {n}",
               f"gen {n}: the gen attribute is TRUE when the option is set")
           for n in range(6)],
    )
    found = urls(backend.search("json_generator_set_pretty (gen, TRUE)"))
    assert found[:1] == ["http://j.test/method.Generator.set_pretty"]
    # an option's number is the user's value too
    holding(backend, [doc("http://a.test/columns", "columns Invocation",
                          "columns -W, --width=num sets the line width; -c, --columns=num "
                          "the number of columns")])
    assert urls(backend.search("columns -W 72 -c 3"))[:1] == ["http://a.test/columns"]


def test_a_long_option_with_its_value_is_an_option(backend):
    # "--encryption=repokey" as pasted from a command line: read as an exclusion of the
    # phrase "encryption repokey" it leaves the other pages, and loses the answer
    holding(
        backend,
        [doc("http://b.test/usage/init", "borg init",
             "Use repokey: borg init --encryption repokey /path/to/repo"),
         doc("http://b.test/usage/prune", "borg prune",
             "borg prune --list --keep-daily=7 --keep-weekly=4 /path/to/repo")]
        + [doc(f"http://b.test/usage/{n}", f"borg command {n}",
               "borg init creates a repository; see init and encryption")
           for n in range(12)],
    )
    assert urls(backend.search("borg init --encryption=repokey"))[:1] == [
        "http://b.test/usage/init"]
    assert urls(backend.search("borg prune --keep-daily=7"))[:1] == [
        "http://b.test/usage/prune"]


def test_a_one_dash_option_written_as_no_word_is_an_option(backend):
    # "-show_streams" as pasted from a command line: read as an exclusion it drops the
    # page documenting it, while the other pages still match, so no fallback runs
    holding(
        backend,
        [doc("http://f.test/ffprobe", "ffprobe",
             "ffprobe -show_streams prints every stream of the input, one section each"),
         doc("http://f.test/gs", "Ghostscript devices",
             "Write a PDF: gs -sDEVICE=pdfwrite -o out.pdf in.pdf")]
        + others("f.test", "ffprobe tool", "ffprobe shows streams; gs renders"),
    )
    assert urls(backend.search("ffprobe -show_streams"))[:1] == ["http://f.test/ffprobe"]
    assert urls(backend.search("gs -sDEVICE=pdfwrite"))[:1] == ["http://f.test/gs"]


def test_an_option_written_as_a_minus_and_a_colon_is_a_word(backend):
    # Gambit's runtime options ("-:d0"): read as an exclusion of "d0", it drops the manual
    # documenting it and leaves the page that only runs the interpreter
    holding(backend, [
        doc("http://g.test/manual", "Gambit manual",
            "gsi -:d0 starts the interpreter with the debug level 0; -:m sets the heap."),
        doc("http://g.test/repl", "Web REPL", "The web REPL runs gsi in the browser."),
    ])
    assert urls(backend.search("gsi -:d0")) == ["http://g.test/manual"]


def test_a_short_option_closing_a_quoted_value_is_read_literally(backend):
    # "-E'" as pasted: cflow --cpp='cc -E'. Read as an exclusion of "e", every page
    # holding the other words says "e" somewhere, so the query found nothing at all
    holding(
        backend,
        [doc("http://c.test/preprocessing", "Preprocessing",
             "Run the preprocessor first: cflow --cpp='cc -E' main.c uses cc as the cpp"),
         doc("http://c.test/options", "Options",
             "cflow options: the cpp option names the preprocessor to use, cc by default")]
        + others("c.test", "cflow", "cflow reads each source file"),
    )
    found = backend.search("cflow --cpp='cc -E'")
    assert urls(found)[:1] == ["http://c.test/preprocessing"]
    assert found.extra.get("reading") == "literal"


def test_a_command_line_of_one_dash_words_given_values_is_read_as_words(backend):
    # "-dir", "-acl", "-path": an option given a value before another option, or after
    # options; read as exclusions they drop the one page holding the other words, so the
    # query found nothing at all. The options are words from the first reading (the
    # literal reading found the page when they were exclusions).
    holding(
        backend,
        [doc("http://o.test/acl", "Setting ACL entries",
             "Grant read: fs setacl -dir . -acl pat rlidwk gives pat those rights"),
         doc("http://o.test/quota", "Setting the quota",
             "fs setquota -path /afs/example.com/usr/pat -max 3000 sets the quota")]
        + others("o.test", "fs commands", "fs lists the acl of a dir"),
    )
    for query, page in (("fs setacl -dir . -acl pat rlidwk", "http://o.test/acl"),
                        ("fs setquota -path /afs/example.com/usr/pat -max 3000",
                         "http://o.test/quota")):
        found = backend.search(query)
        assert urls(found)[:1] == [page], query
        assert found.extra.get("reading") != "literal"
        parsed = parse(query)  # no exclusion: every leaf is a positive one
        assert list(parsed.leaves()) == list(parsed.leaves(positive_only=True)), query


def test_an_exclusion_that_leaves_nothing_is_read_literally(backend):
    # "-metric" is gm compare's option, and no rule of the lexer reads it as one: as an
    # exclusion it drops every page holding the other words (each says "metric"), so the
    # query found nothing where plain any-word BM25 ranks the answer first
    holding(
        backend,
        [doc("http://m.test/compare", "gm compare",
             "gm compare -metric PSNR reports the peak signal to noise ratio; the metric "
             "may be MAE, MSE or PSNR"),
         doc("http://m.test/news", "News",
             "gm compare: the PSNR metric is computed in double precision")]
        + others("m.test", "Utilities", "gm convert and gm mogrify"),
    )
    found = backend.search("gm compare -metric PSNR")
    assert urls(found)[:1] == ["http://m.test/compare"]
    assert found.extra.get("reading") == "literal"
    # an exclusion leaving nothing because no page holds the other words keeps its meaning
    assert backend.search("xyzzy -metric").total == 0
    # and one leaving some pages keeps its meaning too, where no page holds both words
    found = backend.search("mogrify -metric")
    assert set(urls(found)) == {f"http://m.test/{n}" for n in range(4)}
    assert found.extra.get("reading") is None
    # but right after a command's name, the page titled by the name holding the word
    # documents the option (SearchPlan._names_its_page)
    found = backend.search("gm -metric")
    assert urls(found)[:1] == ["http://m.test/compare"]
    assert found.extra.get("reading") == "literal"


def test_an_exclusion_right_after_a_command_most_of_its_pages_hold_is_its_option(backend):
    # "-show" is mpicc's option: as an exclusion it dropped the page documenting it and
    # kept the one page on mpicc that never says "show"; more pages hold both words than
    # "mpicc" alone, so no user meant to leave "show" out
    holding(
        backend,
        [doc("http://p.test/mpicc", "mpicc",
             "mpicc -show shows the commands that would be used without running them"),
         doc("http://p.test/index", "Web pages for MPI", "mpicc mpicxx mpif77 mpiexec")]
        + others("p.test", "Compiling", "mpicc compiles a program; show the flags", 2),
    )
    found = backend.search("mpicc -show")
    assert urls(found)[:1] == ["http://p.test/mpicc"]
    assert found.extra.get("reading") == "literal"
    # a word that no more pages on the first word hold than lack stays an exclusion
    found = backend.search("mpicc -compiles")
    assert set(urls(found)) == {"http://p.test/mpicc", "http://p.test/index"}
    assert found.extra.get("reading") is None


def test_an_exclusion_right_after_a_command_its_page_holds_is_its_option(backend):
    # "-maxprocs" is couriertcpd's option: the one page holding both words is the page
    # titled by the command, while more pages on the command never say "maxprocs"
    holding(
        backend,
        [doc("http://c.test/couriertcpd", "couriertcpd",
             "couriertcpd -maxprocs=n limits the number of processes it starts")]
        + others("c.test", "esmtpd", "esmtpd runs under couriertcpd", 4),
    )
    found = backend.search("couriertcpd -maxprocs")
    assert urls(found) == ["http://c.test/couriertcpd"]
    assert found.extra.get("reading") == "literal"
    # a page on another topic holding both words leaves the exclusion as typed
    holding(backend, [doc("http://c.test/snakes", "Snakes of the world",
                          "the python is a large snake")]
            + others("c.test", "Python tutorial", "python programs", 2))
    assert backend.search("python -snake").extra.get("reading") is None


def test_an_option_given_a_file_name_is_an_option(backend):
    # "-python example.i": read as an exclusion of "python" it dropped the page on SWIG's
    # Python module and ranked the other languages' pages
    holding(
        backend,
        [doc("http://s.test/python", "SWIG and Python",
             "swig -python example.i writes example_wrap.c and example.py")]
        + others("s.test", "SWIG and Tcl", "swig -tcl example.i writes example_wrap.c", 3),
    )
    assert urls(backend.search("swig -python example.i"))[:1] == ["http://s.test/python"]


def test_a_setting_given_a_number_finds_the_page_defining_it(backend):
    # "0.8" is the user's value of background_opacity: required, it matched only the
    # change log holding a version 0.8 and left the reference defining the setting to
    # the pages holding some of the words
    holding(
        backend,
        [doc("http://k.test/conf", "kitty.conf",
             "background_opacity 1.0 The opacity of the background, between zero and one",
             headings="background_opacity"),
         doc("http://k.test/changelog", "Changelog",
             "0.8 released: background_opacity now works on macOS. 0.7 released: "
             "font_size may be fractional. 0.6 released: cursor_shape adds underline. "
             "0.5 released: scrollback_lines may be negative")]
        + others("k.test", "Notes", "the background of a window", 3),
    )
    assert urls(backend.search("background_opacity 0.8"))[:1] == ["http://k.test/conf"]
    # a field's name and its colon, as a control file writes it, is given a value too
    holding(
        backend,
        [doc("http://d.test/controlfields", "Control fields - Debian Policy v4.6.2.0",
             "Standards-Version The most recent version of the standards with which the "
             "package complies; a package updates its Standards-Version when it complies",
             headings="Standards-Version"),
         doc("http://d.test/source", "Source packages - Debian Policy v4.6.2.0",
             "A source package holds debian/control, debian/rules, debian/changelog and "
             "debian/copyright; its control file names the maintainer, the section, the "
             "priority, the build dependencies and Standards-Version: 4.6.2.0")]
        + others("d.test", "Debian Policy v4.6.2.0", "packaging rules", 3),
    )
    assert urls(backend.search("Standards-Version: 4.6.2.0"))[:1] == [
        "http://d.test/controlfields"]


def test_an_option_of_any_length_given_a_number_is_an_option(backend):
    # "-duration 10": read as an exclusion of "duration" it dropped the page documenting
    # the option while the change logs holding the other words still matched
    holding(
        backend,
        [doc("http://b.test/benchmark", "gm benchmark",
             "gm benchmark -duration 10 convert in.jpg out.png repeats the convert command "
             "for the duration given in seconds")]
        + others("b.test", "Changes", "gm benchmark now reports 10 iterations of convert", 3),
    )
    found = backend.search("gm benchmark -duration 10 convert")
    assert urls(found)[:1] == ["http://b.test/benchmark"]


def test_an_option_given_a_word_before_another_option_is_an_option(backend):
    # "mencoder -ovc copy -oac copy -audiofile": read as exclusions of "ovc", "oac" and
    # "audiofile", it dropped the page documenting the options, and the pages holding
    # "mencoder" and "copy" alone answered
    holding(
        backend,
        [doc("http://m.test/streamcopy", "Stream copying",
             "mencoder -ovc copy -oac copy -audiofile track.mp3 copies the streams "
             "as they are: ovc selects the video codec, oac the audio codec")]
        + others("m.test", "Encoding", "mencoder can copy a file to another", 3),
    )
    found = backend.search("mencoder -ovc copy -oac copy -audiofile")
    assert urls(found)[:1] == ["http://m.test/streamcopy"]


@pytest.mark.parametrize("query, page", [
    ("$(basename $file .txt)", "http://w.test/shell"),
    ("echo ${HOME} (see basename)", "http://w.test/shell"),
])
def test_dollars_and_parentheses_find_the_page(pasted, query, page):
    assert page in urls(pasted.search(query)), query


def test_typed_operators_keep_their_meaning(pasted):
    assert urls(pasted.search("packets -tshark")) == ["http://w.test/filters"]
    # no page holds the phrase: its words answer, as plain any-word BM25 reads it
    found = pasted.search('"packets tshark"')
    assert found.extra.get("reading") == "words"
    assert urls(found) == ["http://w.test/tshark"]  # the page holding both words


@pytest.mark.parametrize("query, pages", [
    # a dotted name written nowhere whole
    ("net.ipv4.conf.all.forwarding", {"http://w.test/sysctl", "http://w.test/proc"}),
    # a snake_case name written nowhere whole
    ("ip_forward_enable", {"http://w.test/sysctl", "http://w.test/proc"}),
    # a quoted string no page holds
    ('"routing is off"', {"http://w.test/sysctl", "http://w.test/proc"}),
    # a punctuation-heavy identifier
    ("Filters::select_by(field)", {"http://w.test/filters"}),
    # a $(...) expression
    ("$(dirname $file)", {"http://w.test/shell"}),
    # a command line pasted with its options
    ("ping -c 5 -W 2 localhost", {"http://w.test/ping"}),
    # a typo in one of the words
    ("tshark capture pcap packetz", {"http://w.test/tshark"}),
    # a very long question
    ("how can I see whether packet routing is switched on in the kernel of my own "
     "machine without rebooting it", {"http://w.test/sysctl", "http://w.test/proc"}),
])
def test_never_fewer_pages_than_plain_any_word_bm25(pasted, query, pages):
    # each page holds a word of the query, so plain any-word BM25 finds it
    assert set(urls(pasted.search(query))) >= pages, query


@pytest.mark.parametrize("query, pages", [
    ("net.ipv4.ip_forward", {"http://w.test/sysctl", "http://w.test/proc"}),
    ("ip_forward", {"http://w.test/sysctl", "http://w.test/proc"}),
    ("git config user.name", {"http://w.test/git"}),
    ("user.name", {"http://w.test/git"}),
    ("AllowOverride", {"http://w.test/apache"}),
    ("allow override", {"http://w.test/apache"}),
    (".htaccess", {"http://w.test/apache"}),
])
def test_identifiers_match_whole_and_as_the_phrase_of_their_parts(pasted, query, pages):
    assert set(urls(pasted.search(query))) >= pages, query


def test_the_any_word_fallback_finds_every_page_with_a_word(pasted):
    # no page holds all three words: every page holding any of them is a result, as
    # plain any-word BM25 would find
    found = pasted.search("routing replies expansions", size=20)
    assert set(urls(found)) == {"http://w.test/sysctl", "http://w.test/proc",
                                "http://w.test/ping", "http://w.test/shell"}
    assert found.total == 4


def test_keywords_on_few_pages_are_followed_by_the_pages_holding_some(backend):
    # four pages hold "aptitude" and "libc6" ("why" is a question word, optional); the
    # reference page of "aptitude why" names no libc6: plain any-word BM25 finds it, so
    # must we, after the pages holding every word
    holding(
        backend,
        [doc("http://a.test/why", "aptitude why",
             "aptitude why explains why a package is installed, from the packages that "
             "depend on it")]
        + [doc(f"http://a.test/notes-{n}", f"Notes {n}",
               "aptitude upgraded libc6 in this release") for n in range(4)]
        + others("o.test", "Other", "nothing to see", 3),
    )
    found = backend.search("aptitude why libc6")
    assert set(urls(found)[:4]) == {f"http://a.test/notes-{n}" for n in range(4)}
    assert urls(found)[4:] == ["http://a.test/why"]
    assert found.extra.get("reading") == "words"
    # two words: the pages holding both, none other
    assert set(urls(backend.search("aptitude libc6"))) == {
        f"http://a.test/notes-{n}" for n in range(4)}


def test_a_qualified_name_matches_its_member_beside_its_qualifier(backend):
    # std.healthy is written whole only in notes that mention it; the reference page
    # defines "healthy" under the std module: plain any-word BM25 finds it, so must we,
    # among the pages holding the name whole (a page holding one of the two words is not
    # one of them)
    holding(
        backend,
        [doc("http://v.test/vmod-std", "vmod std",
             "BOOL healthy(BACKEND be) Returns true if the backend be is healthy. "
             "The std module holds the standard functions.")]
        + [doc(f"http://v.test/notes-{n}", f"Upgrade notes {n}",
               "Replace req.backend.healthy with std.healthy in your VCL.") for n in range(3)]
        + [doc("http://v.test/probes", "Probes", "A healthy backend answers its probe.")],
    )
    found = urls(backend.search("std.healthy"))
    notes = {f"http://v.test/notes-{n}" for n in range(3)}
    assert set(found[:4]) == notes | {"http://v.test/vmod-std"}
    assert set(urls(backend.search('"std healthy"'))) == notes  # typed quotes: as typed


def test_an_identifier_on_few_pages_is_followed_by_its_parts_apart(backend):
    # ngx_http_core is written whole on one page; another holds its parts apart: plain
    # any-word BM25 finds it, so must we, after the page holding it whole
    holding(
        backend,
        [doc("http://n.test/core", "Core module", "The ngx_http_core module sets limits."),
         doc("http://n.test/http", "HTTP", "The core of the http server; ngx builds.")]
        + others("n.test", "Other", "nothing to see", 3),
    )
    assert urls(backend.search("ngx_http_core")) == ["http://n.test/core", "http://n.test/http"]


def test_a_configuration_line_on_few_pages_is_followed_by_its_words_apart(backend):
    # "DefaultRoot ~ !adm": a directive as a configuration file writes it, its signed words
    # a group and the home directory; one page holds both words, the reference page
    # defining DefaultRoot writes another group: plain any-word BM25 finds it, so must we
    holding(
        backend,
        [doc("http://p.test/mod_auth", "mod_auth",
             "DefaultRoot directory [group-expression] sets the root of a chroot jail: "
             "DefaultRoot ~ !staff keeps every user but staff in their home directory."),
         doc("http://p.test/nonroot", "Running as a non-root user",
             "DefaultRoot and the adm group need root privileges.")]
        + others("p.test", "Other", "nothing to see", 3),
    )
    found = backend.search("DefaultRoot ~ !adm")
    assert urls(found) == ["http://p.test/nonroot", "http://p.test/mod_auth"]
    assert found.extra.get("reading") == "words"
    # typed as words, the two words: the page holding both, none other
    assert urls(backend.search("DefaultRoot adm")) == ["http://p.test/nonroot"]


def test_a_query_of_exclusions_alone_reads_literally(backend):
    # "-no-undefined" is a linker's option: as an exclusion it leaves no word to search,
    # and a query of exclusions alone finds nothing whatever the pages hold
    holding(
        backend,
        [doc("http://l.test/link-mode", "Link mode",
             "Pass -no-undefined when every symbol of the library resolves at link time.")]
        + others("l.test", "Installing", "Install the library with make install"),
    )
    found = backend.search("-no-undefined")
    assert urls(found) == ["http://l.test/link-mode"]
    assert found.extra.get("reading") == "literal"
    assert backend.search("-xyzzy").total == 0  # nothing holds the word: nothing, as typed


def test_a_query_beginning_with_a_short_option_finds_the_page_of_the_option(backend):
    # "-m j", lame's joint stereo mode as pasted from a command line: read as "j" without
    # "m", it left out the page documenting the option and found the pages saying "j" alone
    holding(
        backend,
        [doc("http://lame.test/detailed", "Command line switches",
             "-m j joint stereo, -m m mono, -m s forced L/R stereo: the channel mode."),
         doc("http://fftw.test/arrays", "Arrays", "The index j walks the rows of the array.")]
        + [doc(f"http://fftw.test/loop{n}", f"Loop {n}", f"for (j = 0; j < {n}; ++j) loops")
           for n in range(3)],
    )
    assert urls(backend.search("-m j"))[0] == "http://lame.test/detailed"
