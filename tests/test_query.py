"""The shared query language: syntax, analysis of leaves, garbage tolerance, limits."""

import pytest

from index.fields import DEFINE_FIELDS, QUALIFIER_FIELDS, FieldWeights, defining_fields
from index.query import (
    MAX_DEPTH,
    MAX_NEAR_GROUPS,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    NEAR_WINDOW,
    QUESTION_COVERAGE,
    And,
    Lang,
    Not,
    Or,
    Phrase,
    QueryError,
    QueryTooComplex,
    QueryTooLong,
    Site,
    Term,
    is_sentence,
    literal_reading,
    looks_pasted,
    names_identifier,
    option_after_command,
    parse,
    qualified_parts,
    relaxations,
    scored_optional_words,
)


def root(text):
    return parse(text).root


def test_single_word_is_analyzed():
    assert root("Running") == Term("Running", "run")


def test_words_are_anded():
    assert root("python tutorials") == And(
        (Term("python", "python"), Term("tutorials", "tutori"))
    )


def test_phrase_keeps_stopwords_and_order():
    assert root('"to be or not to be"') == Phrase(
        "to be or not to be", ("to", "be", "or", "not", "to", "be")
    )


def test_one_word_phrase_is_a_term_even_if_stopword():
    assert root('"the"') == Term("the", "the")
    assert root('"The" python') == And((Term("The", "the"), Term("python", "python")))


def test_word_with_punctuation_becomes_a_phrase():
    assert root("os.path") == Phrase("os.path", ("os", "path"), "os.path")
    assert root("e-mail") == Phrase("e-mail", ("e", "mail"))


def test_identifiers_keep_their_whole_form():
    assert root(".gitignore") == Term(".gitignore", "gitignor", ".gitignore")
    assert root("mod_rewrite") == Phrase("mod_rewrite", ("mod", "rewrit"), "mod_rewrite")
    assert root("__init__") == Term("__init__", "init", "__init__")
    assert root("->>") == Term("->>", "->>", "->>")  # an operator, not an exclusion
    assert root("-x") == Not(Term("x", "x"))
    assert root("AllowOverride") == Term("AllowOverride", "allowoverrid")
    for text in ("std::vector", "os.path.join", ".gitignore", "->> json"):
        assert str(parse(str(parse(text)))) == str(parse(text))


def test_a_qualified_name_is_its_qualifier_and_member():
    member = Phrase("del_ws_spc", ("del", "ws", "spc"), "del_ws_spc")
    assert qualified_parts(root("Util.del_ws_spc")) == (Term("Util", "util"), member)
    assert [str(w) for w in qualified_parts(root("MPEG::File::strip"))] == ["file", "strip"]
    for text in (".gitignore", "mod_rewrite", "->>", "AllowOverride", "python", "e-mail",
                 "example.i", "sources.list"):
        assert qualified_parts(root(text)) is None
    # the page holding it whole, or its member beside its qualifier, matches
    query = parse("Util.del_ws_spc lens")
    whole = root("Util.del_ws_spc")
    assert query.matching == And((Or((whole, And((Term("Util", "util"), member)))),
                                  Term("lens", "len")))
    assert [str(w) for w in query.defined_words] == ["util", "del_ws_spc", "len"]
    assert parse("python tutorial").matching == parse("python tutorial").root


def test_a_member_written_after_its_class_with_a_hash_is_a_qualified_name():
    # Ruby's and Javadoc's references write an instance method Class#method: the dotted
    # name, not a phrase of its parts; quoted, or after a file's name (a page's anchor),
    # it stays as typed
    assert root("AbstractBlock#find_by") == root("AbstractBlock.find_by")
    assert [str(w) for w in qualified_parts(root("Section#sectnum"))] == ["section", "sectnum"]
    assert [str(w) for w in qualified_parts(root("Asciidoctor::Document#doctitle"))] == [
        "document", "doctitl"]
    assert names_identifier(parse("OptionParser#accepts"))
    for text in ('"AbstractBlock#find_by"', "install.html#setup", "a#b#c", "#include", "C#"):
        assert qualified_parts(root(text)) is None


def test_a_capitalised_member_is_a_name_not_an_extension():
    # a file's extension is small letters or capitals; a capitalised member names a
    # package or class, and its qualifier defines it in a page's title or headings
    assert qualified_parts(root("GNATCOLL.Mmap")) == (Term("GNATCOLL", "gnatcol"),
                                                      Term("Mmap", "mmap"))
    assert [str(w) for w in qualified_parts(root("click.Path"))] == ["click", "path"]
    for text in ("example.i", "Build.PL", "README.TXT", "pg_hba.conf"):
        assert qualified_parts(root(text)) is None
    assert defining_fields(parse("GNATCOLL.Mmap")) == [
        (Term("GNATCOLL", "gnatcol"), QUALIFIER_FIELDS), (Term("Mmap", "mmap"), DEFINE_FIELDS)]
    assert [f for _, f in defining_fields(parse("os.path.join"))] == [QUALIFIER_FIELDS,
                                                                      DEFINE_FIELDS]
    assert [f for _, f in defining_fields(parse("example.i"))] == [DEFINE_FIELDS]
    # the qualifier may be in the URL (Javadoc's joptsimple/OptionException.html), the
    # member only in the headings
    assert QUALIFIER_FIELDS.url > 0 and QUALIFIER_FIELDS.title > 0
    assert DEFINE_FIELDS.url == DEFINE_FIELDS.title == 0


def test_exclusions():
    assert root("python -snake") == And(
        (Term("python", "python"), Not(Term("snake", "snake")))
    )
    assert root('python -"monty python"') == And(
        (Term("python", "python"), Not(Phrase("monty python", ("monti", "python"))))
    )


def test_site_and_negated_site():
    assert root("site:Docs.Example.TEST python") == And(
        (Site("docs.example.test"), Term("python", "python"))
    )
    assert root("python -site:spam.test") == And(
        (Term("python", "python"), Not(Site("spam.test")))
    )


def test_lang_operator():
    assert root("python lang:DE") == And((Term("python", "python"), Lang("de")))
    assert root("python -lang:en-GB") == And((Term("python", "python"), Not(Lang("en"))))
    assert root("lang:fr OR lang:de_CH") == Or((Lang("fr"), Lang("de")))
    assert not parse("lang:fr").matches_nothing
    for junk in ("lang:", "lang:1", "lang:-", "lang:x"):  # no language: the token is dropped
        assert parse(f"python {junk}").root == Term("python", "python")
    assert ("In every language", "python") in relaxations(parse("python lang:de"))


def test_site_strips_scheme_port_and_path():
    assert root("site:https://www.example.test:8443/docs/") == Site("www.example.test")


def test_site_alone_is_searchable():
    q = parse("site:example.test")
    assert q.root == Site("example.test")
    assert not q.matches_nothing


def test_or_binds_tighter_than_and():
    assert root("w x OR y") == And(
        (Term("w", "w"), Or((Term("x", "x"), Term("y", "y"))))
    )


def test_pipe_is_or():
    assert root("cat | dog") == Or((Term("cat", "cat"), Term("dog", "dog")))


def test_or_chains_flatten():
    assert root("x OR y OR z") == Or((Term("x", "x"), Term("y", "y"), Term("z", "z")))


def test_lowercase_or_is_a_word():
    # "or" is then a stopword, dropped because other words remain.
    assert root("cats or dogs") == And((Term("cats", "cat"), Term("dogs", "dog")))


def test_groups():
    assert root("(python OR java) tutorial") == And(
        (
            Or((Term("python", "python"), Term("java", "java"))),
            Term("tutorial", "tutori"),
        )
    )
    assert root("(x y) OR z") == Or(
        (And((Term("x", "x"), Term("y", "y"))), Term("z", "z"))
    )


def test_negated_group():
    assert root("web -(spam OR scam)") == And(
        (Term("web", "web"), Not(Or((Term("spam", "spam"), Term("scam", "scam")))))
    )


def test_exclusion_inside_or_moves_to_the_and():
    assert root("x OR -y") == And((Term("x", "x"), Not(Term("y", "y"))))
    assert root("w (x OR -y)") == And(
        (Term("w", "w"), Term("x", "x"), Not(Term("y", "y")))
    )


def test_or_of_sites():
    assert root("site:a.test OR site:b.test") == Or((Site("a.test"), Site("b.test")))


def test_stopwords_dropped_when_other_content():
    assert root("the history of python") == And(
        (Term("history", "histori"), Term("python", "python"))
    )


def test_stopword_only_query_is_kept():
    assert root("to be or not") == And(
        (Term("to", "to"), Term("be", "be"), Term("or", "or"), Term("not", "not"))
    )


def test_excluded_stopword_is_dropped():
    assert root("python -the") == Term("python", "python")


def test_only_exclusions_matches_nothing():
    assert parse("-python").matches_nothing
    assert parse("-python -site:x.test").matches_nothing
    assert not parse("java -python").matches_nothing


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "OR",
        "OR OR |",
        "-",
        "- -",
        "--",
        '""',
        '" "',
        "()",
        "(((",
        ")))",
        "site:",
        "!!!",
    ],
)
def test_garbage_gives_an_empty_query(text):
    q = parse(text)
    assert q.root is None
    assert q.matches_nothing
    assert q.terms() == []


def test_unbalanced_quote_runs_to_the_end():
    assert root('python "monty flying') == And(
        (Term("python", "python"), Phrase("monty flying", ("monti", "fli")))
    )


def test_lone_operators_are_ignored():
    assert root("OR python OR") == Term("python", "python")
    assert root("x OR OR y") == Or((Term("x", "x"), Term("y", "y")))
    assert root("x - y") == And((Term("x", "x"), Term("y", "y")))


def test_unbalanced_parentheses():
    assert root("(python java") == And((Term("python", "python"), Term("java", "java")))
    assert root("python) java(") == And(
        (Term("python", "python"), Term("java(", "java"))
    )


def test_a_call_is_its_name_and_its_arguments():
    # the name glued to the first argument, as a call is written: two words, the name
    # matching whole (an identifier), not the phrase of the name and the argument
    assert root("cairo_set_source_rgb(cr, 1)") == And((
        Phrase("cairo_set_source_rgb", ("cairo", "set", "sourc", "rgb"),
               "cairo_set_source_rgb"),
        Term("cr,", "cr"), Term("1", "1")))
    assert root("abort(404)") == And((Term("abort", "abort"), Term("404", "404")))
    # a keyword argument names its parameter: it stays with the name, as signatures
    # write them
    assert root("TCPConnector(limit_per_host=10)") == Phrase(
        "TCPConnector(limit_per_host=10", ("tcpconnector", "limit", "per", "host", "10"))
    # a name ends with a letter, a digit or "_": before "(" a dot ends no name, and Go's
    # type assertion x.(T) is one expression, the phrase of its words, T not a value
    assert root("x.(T)") == Phrase("x.(T", ("x", "t"))
    assert root("v.(type)") == Phrase("v.(type", ("v", "type"))


def test_a_calls_arguments_and_an_options_number_are_optional_words():
    # the user's own values: the page documenting the call or the option names none of
    # them, so only the name (and the options) must match; the values still score
    def words(text):
        q = parse(text)
        return ([str(w) for w in q.required_words], [str(w) for w in q.optional_words],
                q.question)

    assert words("json_generator_set_pretty (gen, TRUE)") == (
        ["json_generator_set_pretty"], ["gen", "true"], False)
    assert words("cairo_set_source_rgb(cr, 0, 0, 0)") == (
        ["cairo_set_source_rgb"], ["cr", "0", "0", "0"], False)
    # a call inside the arguments closes its own parenthesis, not the call's
    assert words("f_x(x, sizeof(buf), 10) tail") == (
        ["f_x", "tail"], ["x", "sizeof", "buf", "10"], False)
    assert words("columns -W 72 -c 3") == (["column", "w", "c"], ["72", "3"], False)
    # more words beside a call than a question frames are not a question
    assert words("read values with foo_bar(x)")[2] is False
    # parentheses after a word that is no name in code group words, as typed
    assert words("jaguar (car)") == (["jaguar", "car"], [], False)
    assert parse("git (log OR show)").call_arguments == ()
    assert words("foo_bar(x)") == (["foo_bar"], ["x"], False)
    # a setting's value, as a configuration line gives it; an operator names no setting
    assert words("background_opacity 0.8") == (["background_opacity"], ["\"0 8\""], False)
    assert words("PassivePorts 49152 65534") == (["passiveport"], ["49152", "65534"], False)
    assert words("x == 0.3")[1] == []
    assert words("Standards-Version: 4.6.2.0") == (['"standard version"'], ['"4 6 2 0"'],
                                                   False)


@pytest.mark.parametrize("text, root_text", [
    # an option given a file name, a negative constant in capitals: words
    ("swig -python example.i", "swig python example.i"),
    ("snd_pcm_writei returns -EPIPE", "snd_pcm_writei return epip"),
    # an option given a plain word stays an exclusion (the plan may read it as an option)
    ("swig -python example", "swig -python exampl"),
    ("jaguar -car speed", "jaguar -car speed"),
    # an option given a word and then another option, and an option after options: words
    ("mencoder -ovc copy -oac copy -audiofile", "mencod ovc copi oac copi audiofil"),
    ("flask tutorial -video -youtube", "flask tutori -video -youtub"),
])
def test_an_option_given_a_file_name_and_a_negative_constant_are_words(text, root_text):
    assert str(parse(text).root) == root_text


@pytest.mark.parametrize("text, after", [
    ("mpicc -show", True),
    ("couriertcpd -maxprocs", True),
    ("couriertcpd -maxprocs 10", False),  # given a number: an option already
    ("python -snake", True),  # which one, only the pages tell (SearchPlan.falls_back)
    ("mpicc --show", False),  # a long option is a word already
    ("flask tutorial -video", False),
    ("-show mpicc", False),
    ("Python -snake", False),  # a capital: no command's name
])
def test_an_exclusion_right_after_a_command_name(text, after):
    assert option_after_command(parse(text)) is after


def test_double_minus_is_one_exclusion():
    assert root("x --y") == And((Term("x", "x"), Not(Term("y", "y"))))


def test_a_long_option_is_a_word():
    assert root("git --amend") == And((Term("git", "git"), Term("--amend", "amend")))
    assert root("--abbrev-ref") == Phrase("--abbrev-ref", ("abbrev", "ref"))
    # with its value, as pasted from a command line: a word, not an exclusion
    assert root("borg init --encryption=repokey") == And((
        Term("borg", "borg"), Term("init", "init"),
        Phrase("--encryption=repokey", ("encrypt", "repokey"))))
    assert root("--keep-daily=7") == Phrase("--keep-daily=7", ("keep", "daili", "7"))


def test_a_one_dash_option_written_as_no_word_is_a_word():
    # an underscore or "=", a capital after a small letter, one letter and digits
    assert root("ffprobe -show_streams") == And((
        Term("ffprobe", "ffprobe"), Phrase("-show_streams", ("show", "stream"))))
    assert root("tool -sDEVICE=pdfwrite") == And((
        Term("tool", "tool"), Phrase("-sDEVICE=pdfwrite", ("sdevic", "pdfwrite"))))
    assert root("gs -dNOPAUSE") == And((Term("gs", "gs"), Term("-dNOPAUSE", "dnopaus")))
    assert root("cc file -O2") == And((Term("cc", "cc"), Term("file", "file"),
                                       Term("-O2", "o2")))
    # a minus and a colon (Gambit's runtime options): no word begins with a colon
    assert root("gsi -:d0") == And((Term("gsi", "gsi"), Term("-:d0", "d0")))
    assert str(root("gsi -:m8,h512")) == 'gsi "m8 h512"'
    # a word as words are written: an exclusion
    assert root("flask tutorial -video") == And((
        Term("flask", "flask"), Term("tutorial", "tutori"), Not(Term("video", "video"))))
    assert root("packages -python3") == And((Term("packages", "packag"),
                                             Not(Term("python3", "python3"))))


def test_a_short_option_right_after_a_command_is_a_word():
    assert root("cmp -l") == And((Term("cmp", "cmp"), Term("-l", "l")))
    assert root("diff -r --brief dir") == And((Term("diff", "diff"), Term("-r", "r"),
                                               Term("--brief", "brief"), Term("dir", "dir")))
    # a command given by its path, or by a script's first line
    assert root("./configure -h") == And((Term("configure", "configur"), Term("-h", "h")))
    assert str(root("#!/bin/sh -e")) == "sh e"


def test_a_method_called_on_a_variable_is_the_variable_and_the_method():
    # Perl's and PHP's $r->headers_out: two words, the method's name matching whole
    assert root("$r->headers_out") == root("$r headers_out")
    assert str(root("$r->headers_out")) == "r headers_out"
    assert str(root("$r->pnotes")) == "r pnote"
    # no variable before the arrow: a name of its own (Scheme's char->scalar-value), or
    # an operator
    assert str(root("char->scalar-value")) == '"char scalar valu"'
    assert str(root("->> operator")) == "->> oper"
    assert str(root("-$r->x")) == '-"r x"'


def test_a_manual_named_by_its_site_is_defined_with_the_name():
    # the page heading "FFTW User Manual" defines "fftw manual"
    assert [str(w) for w in parse("fftw manual").defined_words] == ["fftw", "manual"]
    assert [str(w) for w in parse("gnu libtool manual").defined_words] == ["libtool", "manual"]
    # other navigational words, or more words than a name: as the label words
    assert [str(w) for w in parse("fftw docs").defined_words] == ["fftw"]
    assert [str(w) for w in parse("maxima computer algebra manual").defined_words] == [
        "maxima", "comput", "algebra"]


def test_a_query_beginning_with_a_short_option_given_a_value_is_the_option():
    # "-m j" pasted from a command line: lame's channel mode, not "j" without "m"
    assert root("-m j") == And((Term("-m", "m"), Term("j", "j")))
    assert str(root("-vf scale=1280:-1")) == 'vf "scale 1280 1"'
    # alone, given an option, after a word, or longer than two letters: exclusions
    assert root("-x") == Not(Term("x", "x"))
    assert str(root("-m -j")) == "-m -j"
    assert str(root("-python docs")) == "-python doc"
    assert str(root("jaguar -car speed")) == "jaguar -car speed"


def test_a_command_given_by_its_path_is_read_by_its_name():
    # a script's first line, or a path given an option: the command's name, the last
    # segment, not the phrase of the directories it is installed in
    assert root("#!/command/execlineb -P") == And((Term("execlineb", "execlineb"),
                                                    Term("-P", "p")))
    assert root("#!/command/execlineb") == Term("execlineb", "execlineb")
    assert str(root("/usr/sbin/postconf -n")) == "postconf n"
    # a path given no option, or followed by an exclusion: the phrase of its parts
    assert str(root("/etc/shorewall/providers")) == '"etc shorewal provid"'
    assert str(root("/etc/apt/sources.list")) == '"etc apt sourc list"'
    assert str(root("docs/intro -draft")) == '"doc intro" -draft'
    # past the command's options, after a word that names no command, or long: exclusions
    assert root("tool file -c") == And((Term("tool", "tool"), Term("file", "file"),
                                        Not(Term("c", "c"))))
    assert root("Packets -r") == And((Term("Packets", "packet"), Not(Term("r", "r"))))
    assert root("packets -tshark") == And((Term("packets", "packet"),
                                           Not(Term("tshark", "tshark"))))


def test_a_short_option_of_a_command_line_is_a_word():
    # after another option of the line, or given a number: a command line's option, not
    # the exclusion of a one-letter word (nobody leaves out "l" and then writes "INFO")
    assert root("celery -A proj worker -l INFO") == And((
        Term("celery", "celeri"), Term("proj", "proj"), Term("worker", "worker"),
        Term("-l", "l"), Term("INFO", "info")))
    assert root("tshark -r capture.pcap -Y http") == And((
        Term("tshark", "tshark"), Term("-r", "r"),
        Phrase("capture.pcap", ("captur", "pcap"), "capture.pcap"), Term("-Y", "y"),
        Term("http", "http")))
    assert root("libx264 -crf 23") == And((Term("libx264", "libx264"), Term("-crf", "crf"),
                                          Term("23", "23")))
    assert root("ping host -c 1000") == And((Term("ping", "ping"), Term("host", "host"),
                                             Term("-c", "c"), Term("1000", "1000")))
    # an option of any length given a number: nobody leaves out "duration", then writes 10
    assert root("gm benchmark -duration 10 convert") == And((
        Term("gm", "gm"), Term("benchmark", "benchmark"), Term("-duration", "durat"),
        Term("10", "10"), Term("convert", "convert")))
    # three letters without a number, or a word as words are written: exclusions
    assert root("libx264 -crf") == And((Term("libx264", "libx264"), Not(Term("crf", "crf"))))
    assert root("git log -v -video") == And((Term("git", "git"), Term("log", "log"),
                                             Not(Term("v", "v")), Not(Term("video", "video"))))


def test_hyphen_inside_word_is_not_exclusion():
    assert root("state-of-the-art") == Phrase(
        "state-of-the-art", ("state", "of", "the", "art")
    )


def test_control_characters_are_whitespace():
    assert root("x\x00y\tz") == And((Term("x", "x"), Term("y", "y"), Term("z", "z")))


def test_unicode_query_is_normalized():
    assert root("CAFÉ") == Term("CAFÉ", "cafe")
    assert root("ＡＰＩ") == Term("ＡＰＩ", "api")


def test_terms_are_positive_unique_and_ordered():
    q = parse('python "python snakes" -java OR site:x.test')
    assert q.terms() == ["python", "snake"]
    assert q.phrases() == [("python", "snake")]


def test_too_long_raises_with_advice():
    with pytest.raises(QueryTooLong, match=str(MAX_QUERY_CHARS)):
        parse("a" * (MAX_QUERY_CHARS + 1))
    assert (
        parse('"' + "x" * (MAX_QUERY_CHARS - 1)).root is None
    )  # at the limit: no error


def test_too_many_terms_raises():
    with pytest.raises(QueryTooComplex, match=str(MAX_TERMS)):
        parse(" ".join(f"w{i}" for i in range(MAX_TERMS + 1)))
    assert parse(" ".join(f"w{i}" for i in range(MAX_TERMS))).root is not None


def test_too_deep_nesting_is_flattened():
    assert root("(" * 200 + "x OR y" + ")" * 200 + " z") == And(
        (Or((Term("x", "x"), Term("y", "y"))), Term("z", "z"))
    )
    assert root("(" * MAX_DEPTH + "x") == Term("x", "x")


def test_query_errors_are_value_errors():
    assert issubclass(QueryError, ValueError)


def test_str_is_canonical_and_reparses_to_the_same_tree():
    for text in [
        "w x OR y",
        'web -"monty python" site:a.test',
        "(x y) OR z -(u OR v)",
        "python -site:spam.test",
        "python -lang:de lang:en",
    ]:
        q = parse(text)
        assert str(parse(str(q))) == str(q)


def test_hostile_input_does_not_crash():
    junk = '"(-)OR|site:-"-"((' * 20
    q = parse(junk[:MAX_QUERY_CHARS])
    assert isinstance(q.matches_nothing, bool)


def test_str_renders_groups():
    assert str(parse("w x OR y")) == "w x OR y"
    assert str(parse("(x y) OR z -(u OR v)")) == "(x y) OR z -(u OR v)"
    assert (
        str(parse('Running "Monty Python" -site:x.test'))
        == 'run "monti python" -site:x.test'
    )


def test_random_garbage_never_raises_and_invariants_hold():
    import random

    rng = random.Random(7)
    alphabet = [
        '"',
        "(",
        ")",
        "-",
        " ",
        "OR",
        "|",
        "site:",
        "x",
        "y",
        "the",
        "é",
        "\x00",
        ".",
    ]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        q = parse(text)
        for node in _walk(q.root):
            if isinstance(node, Or):
                assert len(node.children) > 1
                assert not any(isinstance(c, Not) for c in node.children)
            if isinstance(node, And):
                assert len(node.children) > 1


def _walk(node):
    if node is None:
        return
    yield node
    for child in getattr(node, "children", ()):
        yield from _walk(child)
    if isinstance(node, Not):
        yield from _walk(node.child)


def test_words_are_the_free_positive_terms():
    q = parse('python "monty python" -java snakes OR lizards')
    assert q.words() == ["python", "snake", "lizard"]


def test_question_words_are_optional_in_a_plain_query():
    q = parse("how do I ignore files in git")
    assert [w.term for w in q.optional_words] == ["how", "do", "i"]
    assert str(q.matching) == "ignor file git"
    assert [str(w) for w in q.label_words] == ["ignor", "file", "git"]
    assert q.near_terms == ("ignor", "file", "git")
    assert str(q.root) == "how do i ignor file git"  # the query as typed is unchanged


def test_a_questions_framing_words_do_not_score_its_values_and_docs_do():
    # "how do I" and "my" say a question is asked: a FAQ writes them in every entry
    q = parse("how do I forward a port from my pc through the ssh server")
    assert q.question and [w.term for w in q.optional_words] == ["how", "do", "i", "my"]
    assert scored_optional_words(q) == ()
    # not a question (two required words): its optional words score, as before
    keywords = parse("how do I ignore git")
    assert not keywords.question
    assert scored_optional_words(keywords) == keywords.optional_words
    # a question's values (a call's arguments) still score
    q = parse("how do I call cairo_set_source_rgb(cr, 0, 0) in my code")
    assert q.question and [str(w) for w in scored_optional_words(q)] == ["cr", "0", "0"]


def test_a_query_of_question_words_only_keeps_them_all():
    q = parse("how do i")
    assert q.optional_words == () and str(q.matching) == "how do i"


def test_phrases_and_operators_keep_their_exact_meaning():
    assert parse('"how do i" git').optional_words == ()
    for text in ("how do I -svn", "how site:g.test git", "how OR git"):
        q = parse(text)
        assert q.optional_words == () and q.matching == q.root and q.coordinated is None


def test_proximity_looks_for_runs_of_a_few_adjacent_words():
    assert parse("proxy cache").near_groups == (("proxi", "cach"),)
    assert parse("proxy cache server").near_groups == (("proxi", "cach"), ("cach", "server"))
    q = parse("how do I test my click command line program")
    # the last MAX_NEAR_GROUPS pairs: the question's topic, after the words framing it
    assert MAX_NEAR_GROUPS == 3
    assert q.near_groups == (("click", "command"), ("command", "line"), ("line", "program"))
    assert parse("test click command line").near_groups == (
        ("test", "click"), ("click", "command"), ("command", "line"))
    assert q.near_slop == 2 * (NEAR_WINDOW - 1)
    assert parse("git").near_groups == () and parse("git -svn").near_groups == ()


def test_a_long_query_needs_only_most_of_its_words():
    q = parse("configure apache virtual hosts ssl certificates redirect port")
    assert len(q.required_words) == 8
    assert q.coordinated is not None and q.coordinated.count == q.min_words == 6
    short = parse("configure apache virtual hosts")
    assert short.coordinated is None and short.min_words == 4


def test_a_question_matches_any_of_its_words_in_the_page_text():
    q = parse("how do I throw an old page out of the cache")
    assert q.question and q.min_words == 1
    assert q.coordinated is not None and q.coordinated.count == 1
    assert not q.blendable(3)  # its pages lacking words compete by coordination
    assert q.partial_coverage == QUESTION_COVERAGE
    weights = FieldWeights().question()
    assert (weights.title, weights.anchors, weights.url) == (1.0, 0.0, 0.0)
    assert weights.body == 1.0 and weights.tie_breaker == 1.0
    assert FieldWeights().for_query(q) == weights  # the rule both engines compile with
    # keywords, a question of too few words, an operator query: as before
    for text in ("throw old page cache", "how do I ignore git",
                 'how do I "throw away" old pages -svn'):
        other = parse(text)
        assert not other.question and other.partial_coverage == 0.0
        assert FieldWeights().for_query(other) == FieldWeights()
    assert parse("how do I ignore files in git").question  # three required words


def test_pages_may_lack_one_minor_word_never_two():
    short = parse("git tutorial beginners")
    assert short.lacking([1.0, 2.0, 4.0], 0.5) == [((0,), 1 / 7), ((1,), 2 / 7)]
    long = parse("make git ignore some files repository")
    lack = dict(long.lacking([0.5, 1.0, 3.0, 0.5, 1.0, 2.0], 0.5))
    assert set(lack) == {(0,), (1,), (2,), (3,), (4,), (5,)}  # one clause per word
    assert dict(long.lacking([0.5, 1.0, 6.0, 0.5, 1.0, 2.0], 0.5)).keys() == {
        (0,), (1,), (3,), (4,), (5,)}  # not the word of 6/11 of the IDF
    assert parse("git").lacking([3.0], 0.5) == []


def test_a_short_query_naming_a_site_and_describing_it():
    from index.query import described_sites

    assert ("kitty", ("termin",)) in described_sites(parse("kitty terminal"))
    assert ("peewee", ("orm",)) in described_sites(parse("peewee orm"))
    assert ("h2o", ("http2", "server")) in described_sites(parse("h2o http2 server"))
    # a name alone, a question, operators or identifiers describe nothing
    assert described_sites(parse("django docs")) == ()
    assert described_sites(parse("kitty")) == ()
    assert described_sites(parse("how do I change the font size of the terminal")) == ()
    assert described_sites(parse("kitty -terminal")) == ()
    assert described_sites(parse("kitty.conf font_size")) == ()
    assert described_sites(parse("kitty terminal emulator with gpu rendering")) == ()


def test_a_home_page_lead_is_its_title_and_first_words():
    from index.fields import LEAD_WORDS, home_lead

    lead = home_lead("kitty", "The fast, GPU based terminal emulator " + "x " * LEAD_WORDS
                     + "ligatures")
    assert {"kitti", "termin", "emul", "gpu"} <= lead
    assert "ligatur" not in lead


def test_words_like_docs_next_to_a_site_name_are_optional():
    q = parse("django docs")
    assert [w.word for w in q.optional_words] == ["docs"]
    assert [w.word for w in q.required_words] == ["django"]
    assert [w.word for w in parse("debian handbook home").navigational_words] == ["home"]
    # the umbrella a project's name is written after (GNU, Apache)
    assert "mailutils" in parse("gnu mailutils manual").named_sites
    assert [w.word for w in parse("gnu mailutils manual").required_words] == ["mailutils"]
    assert "tomcat" in parse("apache tomcat docs").named_sites
    assert "tomcat" not in parse("apache tomcat access log").named_sites
    # a product's name of several words before "docs": the site called by one of them
    assert {"knot", "dns", "knotdns"} <= parse("knot dns docs").named_sites
    assert "varnish" in parse("varnish cache documentation").named_sites
    assert "cryptography" in parse("pyca cryptography documentation").named_sites
    # ... and the site called by their initials: Request Tracker's site is rt
    assert "rt" in parse("request tracker documentation").named_sites
    assert "nut" in parse("network ups tools manual").named_sites
    assert "rt" not in parse("request tracker").named_sites  # a topic as often
    assert "d" not in parse("django docs").named_sites  # one word is no initials
    assert "libsoup" in parse("libsoup api reference").named_sites
    assert [w.word for w in parse("cairo API reference").optional_words] == ["API", "reference"]
    assert parse("pattern reference count").navigational_words == ()
    # "api" before such a word names the kind of documentation; elsewhere it is a topic
    assert [w.word for w in parse("libssh api documentation").required_words] == ["libssh"]
    assert "jsonglib" in parse("json-glib api reference").named_sites
    assert parse("flask api").named_sites == {"flaskapi"}
    # a C library's name names its project's site: "lib" first, or a word after it
    assert "flac" in parse("libflac api documentation").named_sites
    assert "alsa" in parse("alsa-lib api documentation").named_sites
    assert "rary" not in parse("kombu messaging library docs").named_sites
    assert "c" not in parse("libc docs").named_sites
    assert parse("api changes between versions").navigational_words == ()
    assert parse("flask custom 404 page").named_sites == {"flaskcustom404"}
    assert parse("apache custom error documents").named_sites == {"customerrordocuments"}
    # a guide named by its reader (user guide, user's guide, beginners guide) or a
    # javadoc asks for the site too; a guide for another reader or topic is a page
    assert "cunit" in parse("cunit user guide").named_sites
    assert [w.word for w in parse("cunit user guide").required_words] == ["cunit"]
    assert "chezscheme" in parse("chez scheme user's guide").named_sites
    assert "systemtap" in parse("systemtap beginners guide").named_sites
    # a user manual is one of a site's manuals: "user" stays a word
    assert parse("network ups tools user manual").navigational_words == ()
    assert "joptsimple" in parse("jopt simple javadoc").named_sites
    assert parse("sqlobject developer guide").named_sites == {"sqlobjectdeveloperguide"}
    assert parse("porting guide new versions").navigational_words == ()
    assert parse("user guide").navigational_words == ()
    # a name written with the version wanted names the site called by the name
    assert "modperl" in parse("mod_perl 2.0 documentation").named_sites
    assert "python" in parse("python 3 docs").named_sites
    assert {"scheme48", "scheme"} <= parse("scheme 48 reference manual").named_sites
    assert parse("flask custom 404 page").named_sites == {"flaskcustom404"}
    assert "modperl" not in parse("mod_perl 2.0 filters").named_sites
    # a project's name written with its language names the site called by the name
    assert "coverage" in parse("coverage.py").named_sites
    assert "node" in parse("node.js docs").named_sites
    assert parse("__init__.py").named_sites == {"initpy"}
    assert "conf" not in parse("conf.py settings").named_sites
    # alone, or beside a topic rather than a name, they are words like any other
    assert parse("docs").optional_words == ()
    assert parse("build a pdf of my sphinx documentation").navigational_words == ()
    assert parse('"django docs"').navigational_words == ()


@pytest.mark.parametrize("text, literal, pasted", [
    # an option past the command's words, with no other option or number: an exclusion,
    # read as a word only by the literal reading ("tool -r file -Y filter" is words)
    ("tool file -Y filter", "tool file y filter", True),
    ("tool 1000 -c", "tool 1000 c", True),
    ("$(CC) -o out", "cc o out", True),
    ("blame -log", "blame log", False),
    # an option given a value that is no word, or a value and then another option: the
    # latter, or an option after options, a word already (_command_option)
    ("fs setacl -dir . -acl pat rlidwk", None, True),
    ("fs setquota -path /afs/x/pat -max 3000", None, True),
    ("Tool file -dir . -acl pat", "tool file dir acl pat", True),  # no command first
    ("openssl req -newkey rsa:2048", 'openssl req newkey "rsa 2048"', True),
    ("jaguar -car speed", "jaguar car speed", False),
    # a short option closing a quoted value, as pasted: not an exclusion of "e"
    ("cflow --cpp='cc -E'", 'cflow "cpp cc" e', True),
    ('gcc -D"X" -E"', 'gcc "d x" e', True),
    ("jaguar -car' speed", "jaguar car speed", False),
    ('"quick fox" -site:a.test', '"quick fox"', False),
    ("python tutorial", None, False),
])
def test_the_literal_reading_makes_every_token_a_word(text, literal, pasted):
    parsed = parse(text)
    reading = literal_reading(parsed)
    if literal is None:
        assert reading is None
    else:
        assert reading is not None and str(reading.root) != str(parsed.root)
        if text.endswith("-site:a.test"):  # filters stay filters
            assert "-site:a.test" in str(reading.root)
        else:
            assert str(reading.root) == literal
    assert looks_pasted(parsed) is pasted


@pytest.mark.parametrize("text, named", [
    ("std.healthy", True),
    ("DefaultRoot ~ !adm", True),  # a configuration line's signed words
    (":set hlsearch", True),
    ("%option reentrant", True),
    ("DefaultRoot adm", False),
    ("don't stop-words here", True),  # a hyphenated word: the phrase of its parts
    ("don't stop", False),
    ('"DefaultRoot ~ !adm"', False),  # typed quotes keep their meaning
    ("packets -tshark", False),
])
def test_a_query_names_an_identifier(text, named):
    assert names_identifier(parse(text)) is named


def test_the_query_language_is_guessed_once():
    from index import query as query_module

    parsed = parse("wie installiere ich das paket -xyzzy")
    before = query_module._language.cache_info().misses
    assert parsed.language() == parsed.language() == parse(parsed.raw).language()
    assert query_module._language.cache_info().misses == before + 1


def test_a_lacking_word_joined_to_another_is_a_compound_of_the_query():
    from index.query import joined_compounds

    query = parse("mailbox full text search index")
    assert "fulltext" in joined_compounds(query, 1)  # full
    assert "fulltext" in joined_compounds(query, 2)  # text
    assert "fulltext" not in joined_compounds(query, 0)  # mailbox
    assert set(joined_compounds(query, 0)) <= set(query.compounds)
    assert joined_compounds(parse('"full text" search index'), 1) == ()  # a phrase


def test_a_sentence_without_question_words_is_read_as_a_question():
    # six required words or more, a function word among them, no message punctuation
    for text in ("list the callers of each function rather than the functions it calls",
                 "add a request id to every log line of a web request",
                 "is there a graphical web tool for the cluster instead of the command line"):
        q = parse(text)
        assert is_sentence(q) and q.question and not q.optional_words
        assert q.min_words == 1 and q.partial_coverage == QUESTION_COVERAGE
        assert FieldWeights().for_query(q) == FieldWeights().question()
    # keywords (no function word), a short sentence, a message, a configuration line, an
    # identifier, French, stopwords alone, a pasted command, a quoted phrase: as before
    for text in ("configure apache virtual hosts ssl certificates redirect port",
                 "restrict default kod limited nomodify nopeer noquery",
                 "git set user name and email",
                 "WARNING: Number of errors: 0, skipped probes: 5",
                 "current transaction is aborted, commands ignored until end of transaction block",
                 "the os.path module joins a path to the name of a file",
                 "mettre à jour vers la version suivante de debian",
                 "to be or not to be",
                 "tar -x the archive into a directory of the same name",
                 '"list the callers" of each function rather than the functions it calls'):
        q = parse(text)
        assert not is_sentence(q) and not q.question, text


def test_a_plan_is_partial_when_a_search_it_chose_by_was_cut_short():
    """A pasted command's operator reading cut short by the time budget finds too few, so
    the plan answers with its literal reading: that answer is partial too, for the
    reading it replaced might have found enough. (The same holds for the words reading
    run after a cut-short count: on a real cluster such a query's total differed from the
    unhurried one, unflagged, in tests/test_elasticsearch.py's time-budget test.)"""
    from index.base import Hit, Results
    from index.plan import SearchPlan, Thresholds
    from index.signals import Ranker

    plan = SearchPlan.of(parse("tar -xzf archive.tar.gz"), Thresholds(),
                         Ranker.for_engine("embedded"))
    assert plan.literal is not None

    def run(reading, page, size):
        literal = reading is plan.literal
        results = Results(query="", hits=[], total=5 if literal else 1, page=page,
                          size=size, partial=not literal)
        for i in range(min(size, results.total)):
            reading.take(results, str(i), "", lambda i=i: Hit(
                id=str(i), url=f"http://a.test/{i}", title="", snippet="", score=1.0))
        return results

    results = plan.execute(run)
    assert results.total == 5 and results.partial
