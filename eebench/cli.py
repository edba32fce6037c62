"""The eebench command line: click commands that parse options, call one library function and print.

This is the one place errors become exit codes: bad input (`InputError`) prints one line per problem on stderr
and exits with 2, without a traceback.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import errno
import functools
import io
import json
import os
import re
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import click
from click.core import ParameterSource

from eebench import __version__
from eebench.errors import (EebenchError, EebenchWarning, InputError, Problem, did_you_mean, message_line, near_path,
                            quote)
from eebench.interrupts import interrupt_on_signals
from eebench.prompts import VARIANTS as PROMPT_VARIANTS


_HELP_FOR_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())   # (click 8.2 on; before, help and exit 0)


# The signals that stopped the command, latest last: DuckDB turns the exception a handler raises within a statement
# into its own RuntimeError('Query interrupted'), which is read back as the signal by _Group.invoke.
_STOPPED_BY: list[int] = []


@contextlib.contextmanager
def _terminated_as_exit() -> Iterator[None]:
    """SIGTERM (`timeout`, `kill`, a scheduler's stop) ends a command as Ctrl-C does, through its cleanup: the
    temporary file or folder of an output it was writing is removed (left behind, a hidden `.OUT.xxxx.tmp` folder
    stayed after a killed `generate`). Exit code 143, as a process killed by SIGTERM reports. Ctrl-C (SIGINT)
    raises KeyboardInterrupt as Python's own handler does, and is as sure to end the command."""
    def stop(signum: int, frame: Any) -> None:
        if frame is not None and _drops_exceptions(frame) and hasattr(signal, "setitimer"):
            # raised here, the exit would be printed and dropped (the command ran on): raise it 10 ms later,
            # from wherever the program is then
            signal.signal(signal.SIGALRM, lambda _alarm, later: stop(signum, later))
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        _STOPPED_BY.append(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    _STOPPED_BY.clear()   # (a command run before in this process, as a test's, stopped its own way)
    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:   # not the main thread (a caller's thread running the CLI): its own handling stands
        yield
        return
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:   # (Ctrl-C as Python's own handler, but never dropped)
        signal.signal(signal.SIGINT, stop)
    alarm = signal.getsignal(signal.SIGALRM) if hasattr(signal, "SIGALRM") else None
    try:
        with interrupt_on_signals():   # (and the DuckDB statement running then is interrupted at once)
            yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        if alarm is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, alarm)


def _end_as_stopped() -> None:
    """When SIGINT or SIGTERM stopped the command, end it as that signal does, whatever error the stop became on its
    way out: raised inside DuckDB's read of Python data (the rows `grade` and `ingest` insert), it came back as a
    DuckDB error, then a "failed while writing results" line and exit code 2."""
    if not _STOPPED_BY:
        return
    if _STOPPED_BY[-1] == signal.SIGINT:   # (as click ends Ctrl-C anywhere else: "\nAborted!")
        raise KeyboardInterrupt from None
    sys.exit(128 + _STOPPED_BY[-1])


def _drops_exceptions(frame: Any) -> bool:
    """Whether an exception raised in `frame` would be printed and dropped, not propagated: a finalizer, or
    importlib's weakref callback of a module lock (a SIGTERM in an import was lost so, and `generate` ran on)."""
    code = frame.f_code
    return code.co_name in ("cb", "__del__") or code.co_filename.startswith("<frozen importlib")


# What a write to the standard output fails with when it cannot be written (`> /dev/full`, a full disk, a failing
# device). Files eebench writes name themselves in their errors; an error without a file name is the output's.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _output_failed(exc: OSError) -> NoReturn:
    """One line and exit code 2 for an output that could not be written; any other error without a file name is
    not the user's to fix, and keeps its traceback."""
    if exc.errno not in _OUTPUT_ERRNOS:
        raise exc
    _say_output_failed(exc)
    sys.exit(2)


def _say_output_failed(exc: OSError) -> None:
    with contextlib.suppress(OSError):   # (the error output may be as full)
        click.echo(f"error: cannot write the output: {exc.strerror}", err=True)


def _show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """eebench's own warnings as one `warning:` line; any other as Python shows it."""
    if issubclass(category, EebenchWarning):
        click.echo(message_line(f"warning: {message}"), err=True)
    else:
        _SHOW_PYTHON_WARNING(message, category, *args, **kwargs)


_SHOW_PYTHON_WARNING = warnings.showwarning


class _Command(click.Command):
    """A command whose usage errors name it: click's parser raises some without a context (`grade x --db`,
    `--skip-invalid=1`), and they pointed to `eebench --help`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            rest = super().parse_args(ctx, args)
            _refuse_undecoded_text(ctx, self.params)
            return rest
        except click.UsageError as exc:
            exc.ctx = exc.ctx or ctx
            raise


def _refuse_undecoded_text(ctx: click.Context, params: list[click.Parameter]) -> None:
    """A text option holding bytes of the command line or environment that are not UTF-8 (Python keeps them as
    lone surrogates) is a bad option value: `convert --model $'\\xff'` ended in a UnicodeEncodeError traceback when
    the trajectory was written, `report --where` in a TypeError. (Paths may hold such bytes: file names do.)"""
    for param in params:
        if not isinstance(param, click.Option) or isinstance(param.type, (click.Path, click.File)):
            continue
        value = ctx.params.get(param.name or "")
        for text in value if isinstance(value, (tuple, list)) else [value]:
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(text[exc.start])
                what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
                raise click.BadParameter(f"not UTF-8 text ({what} at character {exc.start + 1})", ctx, param) from None


class _Group(click.Group):
    """Turns eebench's errors, and click's usage errors, into one line each and exit code 2; suggests close command
    names."""

    command_class = _Command

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        _FROM_ENV.clear()   # (the variables of this run only, in either mode)
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        with _terminated_as_exit():
            return self._main(*args, **kwargs)

    def _main(self, *args: Any, **kwargs: Any) -> Any:
        try:   # (click's own standalone mode prints a usage error as four lines: usage, hint, blank, message)
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _HELP_FOR_NO_ARGS as exc:   # `eebench` alone: the help, as click prints it
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            _name_the_variable(exc)
            message = str(_with_variables(exc.format_message()))   # (`--address ... go with --engine ray`)
            where = exc.ctx.command_path if exc.ctx is not None else "eebench"
            if "--help" not in message:
                message = f"{message.removesuffix('.')}; see `{where} --help`"
            click.echo(message_line(f"error: {message}"), err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except BrokenPipeError:   # (`eebench --help | head -1`)
            sys.exit(0)
        except OSError as exc:   # the help or a usage line that could not be written
            _output_failed(exc)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            warnings.simplefilter("default", EebenchWarning)   # (a line, whatever filter the caller set)
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InputError as exc:
            _end_as_stopped()
            _echo_problems("error", [_with_variables(p) for p in exc.problems])
            ctx.exit(2)
        except EebenchError as exc:
            _end_as_stopped()
            click.echo(message_line(f"error: {_with_variables(str(exc))}"), err=True)
            ctx.exit(2)
        except BrokenPipeError:
            ctx.exit(0)
        except RuntimeError as exc:   # a statement DuckDB stopped for a signal: the signal's ending, as elsewhere
            if str(exc) != "Query interrupted" or not _STOPPED_BY:
                raise
            _end_as_stopped()
        except OSError as exc:   # a path the system refuses where no check came first (a name too long, say)
            if exc.filename is None:
                _output_failed(exc)
            click.echo(f"error: {quote(str(exc.filename), 200)}: {exc.strerror or exc}", err=True)
            ctx.exit(2)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with the whole first sentence of its help, wrapped: click cut it at the terminal's width
        (`report   Write one self-contained HTML report: the per...`)."""
        commands = ((name, self.get_command(ctx, name)) for name in self.list_commands(ctx))
        rows = [(name, command.get_short_help_str(limit=1 << 10)) for name, command in commands
                if command is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Every option reads EEBENCH_<COMMAND>_<OPTION> (its long name, as the README promises), whatever its
        Python parameter is called: click's automatic names would follow the parameter (`--from` is `fmt`)."""
        super().add_command(cmd, name)
        for param in cmd.params:
            if isinstance(param, click.Option) and param.envvar is None:
                param.envvar = option_envvar(name or cmd.name or "", param)
            if isinstance(param, click.Option):
                param.handle_parse_result = _noting_the_variable(param)   # type: ignore[method-assign]

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            from eebench.errors import did_you_mean
            if args and args[0] not in self.commands:
                raise click.UsageError(f"no command {args[0]!r}{did_you_mean(args[0], self.commands)}; "
                                       "see `eebench --help`", ctx) from None
            raise exc


# The options of the running command whose values came from environment variables: the variable of each and the
# texts of its value (by its option's flag), so that a problem naming the option, or the file or value it gave,
# names the variable too (the user typed neither)
_FROM_ENV: dict[str, tuple[str, tuple[str, ...]]] = {}


def _noting_the_variable(param: click.Option) -> Callable[..., Any]:
    """The option's handle_parse_result, which also notes in _FROM_ENV when the value came from its variable."""
    parse = param.handle_parse_result

    def handle_parse_result(ctx: click.Context, opts: Any, args: list[str]) -> Any:
        result = parse(ctx, opts, args)
        if param.name and ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT:
            value = ctx.params.get(param.name)
            values = value if isinstance(value, (tuple, list)) else (value,)
            texts = tuple(os.fspath(v) for v in values   # (`-` names no file: the standard input is `-` too)
                          if isinstance(v, (str, os.PathLike)) and os.fspath(v) not in ("", "-"))
            _FROM_ENV[max(param.opts, key=len)] = (str(param.envvar), texts)
        return result
    return handle_parse_result


def _with_variables(problem: Problem | str) -> Problem | str:
    """A problem that names an option an environment variable set, or the file or value it gave (`nope.duckdb: no
    such database`, `trajectory 'x' is not one played in ...`), saying which variable."""
    message = problem.message if isinstance(problem, Problem) else problem
    file = problem.file if isinstance(problem, Problem) else None
    named = [f"{flag} came from {var}" for flag, (var, values) in _FROM_ENV.items()
             if var not in message and (re.search(rf"{re.escape(flag)}(?![\w-])", message)
                                        or file in values or any(repr(v) in message for v in values))]
    if not named:
        return problem
    message = f"{message} ({'; '.join(named)})"
    return problem._replace(message=message) if isinstance(problem, Problem) else message


def _name_the_variable(exc: click.UsageError) -> None:
    """A bad value an environment variable gave is blamed on the variable too: the user typed no option."""
    param, ctx = getattr(exc, "param", None), exc.ctx
    if (isinstance(param, click.Option) and ctx is not None and param.name is not None and param.envvar
            and ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT):
        exc.param_hint = f"{param.get_error_hint(ctx)} (from {param.envvar})"  # type: ignore[attr-defined]


class _Choice(click.Choice):
    """click.Choice that suggests the close choice, as eebench's other names do (`--format tabel`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            from eebench.errors import did_you_mean

            close = did_you_mean(str(value), [str(choice) for choice in self.choices])
            if close:
                exc.message = f"{exc.message.rstrip('.')}{close}"
            raise


class _Argument(click.Argument):
    """A positional argument that refuses an empty value: Path("") is the current folder, so `show ""` showed every
    instance below it."""

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        if any(item == "" for item in (value if isinstance(value, (tuple, list)) else (value,))):
            raise click.BadParameter("an empty value", ctx=ctx, param=self)
        return super().process_value(ctx, value)


_argument = functools.partial(click.argument, cls=_Argument)


class _Path(click.Path):
    """A path option or argument that refuses an empty value, as _Argument does: `--out ''` named the current
    folder, and a file written there failed on the rename of its temporary file."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("an empty value", param, ctx)
        if value == "-" and not self.allow_dash:   # (it named a file `-` in the current folder)
            self.fail("`-` (standard input or output) is not read or written here; give a file's path", param, ctx)
        if self.exists and isinstance(value, (str, os.PathLike)) and not os.path.lexists(value):
            self.fail(f"no such file or folder {quote(os.fspath(value), 200)}{near_path(value)}", param, ctx)
        return super().convert(value, param, ctx)


class _Text(click.ParamType):
    """Text that may name something other than a local path (a URI, a Ray address), refusing an empty value as
    _Path does: `--address ''` reached Ray as no address (a traceback), `--out ''` named the current folder."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("an empty value", param, ctx)
        return value


class _BenchPath(_Path):
    """--bench: an existing folder, bundle or archive; a shipped suite's name is not one, and is told how to make
    one (`eebench publish`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from eebench.suites import shipped_suites

        if not os.path.exists(value) and str(value) in shipped_suites():
            self.fail(f"{quote(str(value), 200)} is a shipped suite, not a folder or bundle; freeze it first: "
                      f"eebench publish {value} --version 1.0.0 --out DIR, then --bench DIR", param, ctx)
        if not os.path.exists(value) and not near_path(value) and did_you_mean(str(value), shipped_suites()):
            self.fail(f"no such folder or bundle {quote(str(value), 200)}; a shipped suite is named alike"
                      f"{did_you_mean(str(value), shipped_suites())}: freeze it with eebench publish SUITE "
                      "--version 1.0.0 --out DIR, then --bench DIR", param, ctx)
        return super().convert(value, param, ctx)


_BENCH = _BenchPath(exists=True, path_type=Path)


class _OneBenchOption(click.Option):
    """--bench of a command that reads one bench (see _one_bench): its environment variable is one path, not split
    as a list of them at ':' as click splits a repeatable option's."""

    def value_from_envvar(self, ctx: click.Context) -> Any:
        value = self.resolve_envvar_value(ctx)
        return None if value is None else (value,)


def _one_bench(ctx: click.Context, param: click.Parameter, values: tuple[Path, ...]) -> Path | None:
    """--bench of a command that reads one bench: given twice, the last silently won (`report` takes several)."""
    if len(values) > 1:
        more = (" (grade each bench's trajectories in a call of its own, into the same --db)"
                if ctx.command.name in ("grade", "convert") else "")
        raise click.BadParameter(f"given {len(values)} times; `eebench {ctx.command.name}` reads one folder or "
                                 f"bundle{more}", ctx, param)
    return values[0] if values else None


def option_envvar(command: str, option: click.Option) -> str:
    """EEBENCH_<COMMAND>_<OPTION>: the command and the option's first long name, upper case, dashes as underscores."""
    names = [n for n in option.opts if n.startswith("--")] or option.opts
    long = names[0].lstrip("-").split("/")[0]
    return f"EEBENCH_{command}_{long}".upper().replace("-", "_")


@click.group("eebench", cls=_Group, context_settings={"help_option_names": ["-h", "--help"],
                                                      "max_content_width": 100})
@click.version_option(__version__, prog_name="eebench")
def main() -> None:
    """Measure how LLM agents explore and exploit, offline, from their trajectories.

    \b
    The flow:  specs --generate--> instances --play/your agent--> trajectories
               your agent's logs --convert--> trajectories
               trajectories + instances --grade--> DuckDB --query--> answers
               suite --publish--> frozen bundle (verify it; grade --bench BUNDLE)
    \b
    Start here:
      eebench list                                          shipped suites and presets
      eebench generate park2026-main --out bench/           materialize the paper's main suite
      eebench show bench/park2026-main/low-small/seed-0.json
      eebench prompt bench/park2026-main/low-small/seed-0.json    what an agent is shown
      eebench play bench/ --agent frontier --out runs.jsonl
      eebench convert logs/ --bench bench/ --out runs.jsonl your agent's logs as trajectories
      eebench grade runs.jsonl --bench bench/ --db results.duckdb
      eebench query "SELECT * FROM agent_summary" --db results.duckdb
      eebench bundles                                       frozen versions to grade against

    Every option can also be set from the environment as EEBENCH_<COMMAND>_<OPTION>.
    """


MAX_PROBLEM_LINES = 50


def _echo_problems(label: str, problems: list[Any], *, every: bool = False) -> None:
    """One line per problem on stderr; past MAX_PROBLEM_LINES, a count of the rest, unless `every` (the records
    --skip-invalid left out: this list is the only place that says which they were)."""
    for problem in problems if every else problems[:MAX_PROBLEM_LINES]:   # (a newline a message holds: escaped)
        click.echo(message_line(f"{label}: {problem}"), err=True)   # (the label within the line's bound)
    if not every and len(problems) > MAX_PROBLEM_LINES:
        click.echo(f"{label}: ... and {len(problems) - MAX_PROBLEM_LINES} more", err=True)


@contextlib.contextmanager
def _progress(total: int, label: str, *, in_bytes: bool = False) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when it is a terminal; silent otherwise (logs and pipes stay clean). `in_bytes`:
    the counts are bytes, shown as MB."""
    if not sys.stderr.isatty() or total <= 1:
        yield lambda n: None
        return
    done = [0]
    megabytes = (lambda _: f"{done[0] / 1e6:,.1f} of {total / 1e6:,.1f} MB") if in_bytes else None
    with click.progressbar(length=total, label=label, file=sys.stderr, show_pos=not in_bytes,
                           item_show_func=megabytes) as bar:
        def update(n: int) -> None:
            done[0] += n
            bar.update(n)
        yield update


@contextlib.contextmanager
def _total_known_later(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar (as `_progress`) for work whose size is known when it starts: `update(done, total)`."""
    with contextlib.ExitStack() as stack:
        bar: list[Callable[[int], None]] = []
        shown = [0]

        def update(done: int, total: int) -> None:
            if not bar:
                bar.append(stack.enter_context(_progress(total, label)))
            bar[0](done - shown[0])
            shown[0] = done
        yield update


@contextlib.contextmanager
def _grade_progress(files: tuple[Path, ...]) -> Iterator[Callable[[int, int], None]]:
    """Grading's progress on a terminal: trajectories read out of those in the files, and steps graded."""
    if not sys.stderr.isatty() or any(str(f) == "-" for f in files):
        yield lambda records, steps: None
        return
    total = sum(_count_lines(f) for f in files if f.is_file())
    steps = 0

    def shown(_: Any) -> str:
        return f"{steps:,} steps"

    with click.progressbar(length=max(total, 1), label="grading trajectories", file=sys.stderr, show_pos=True,
                           item_show_func=shown) as bar:
        def update(records: int, graded: int) -> None:
            nonlocal steps
            steps += graded
            bar.update(records)
        yield update


def _count_lines(path: Path) -> int:
    """Records in a JSONL file, counted as line breaks (a .json file counts once): the progress bar's length."""
    if path.suffix.lower() == ".json":
        return 1
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


MAX_SEED = 2 ** 63 - 1     # as a suite's seeds (README, "Limits on input")
MAX_TIMEOUT_SECONDS = 365 * 24 * 3600   # query --timeout: past it a timer overflows (and nan is no number)
MAX_SEEDS = 1_000_000     # seeds one option may name: a range is made whole in memory
_SEED = click.IntRange(min=0, max=MAX_SEED)   # one --seed: a seed like those of --seeds and suites


def _parse_seeds(text: str | None, option: str = "--seeds") -> list[int] | None:
    """'0,1,2' or '0-9' or '0-4,10' (ASCII digits) as a sorted list of distinct seeds."""
    if text is None:
        return None
    bounds = []
    for part in text.split(","):
        found = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part.strip())
        if found is None or found[2] is not None and int(found[1]) > int(found[2]):
            raise InputError(f"{option}: expected seeds like '0,1,2' or '0-9', found {quote(repr(text))}")
        bounds.append((int(found[1]), int(found[2] or found[1])))
    if any(high > MAX_SEED for _, high in bounds):
        raise InputError(f"{option}: seeds are at most 2^63-1, found {quote(repr(text))}")
    if sum(high - low + 1 for low, high in bounds) > MAX_SEEDS:
        raise InputError(f"{option}: at most {MAX_SEEDS:,} seeds at once, found {quote(repr(text))}")
    return sorted({seed for low, high in bounds for seed in range(low, high + 1)})


# -- specs and instances ------------------------------------------------------------------------------

@main.command("list")
def list_specs() -> None:
    """List the world kinds, the shipped suites, generator presets and hand-made instances.

    \b
      eebench list
    """
    from eebench.documents import load_document
    from eebench.suites import load_suite, shipped_instances, shipped_presets, shipped_suites
    from eebench.world.kinds import kind_of, kinds

    click.echo("suites (eebench generate NAME --out DIR):")
    for name, path in shipped_suites().items():
        doc = load_document(path)
        click.echo(f"  {name:<18} {len(load_suite(path)):>4} instances  {doc.get('description', '').split(':')[0]}")
    click.echo("presets (eebench generate NAME --seeds 0-9 --out DIR):")
    for name, preset in shipped_presets().items():
        click.echo(f"  {name:<18} {kind_of(preset).describe_preset(preset)}")
    click.echo("world kinds (an instance's env; eebench play INSTANCE --agent NAME):")
    for kind in kinds():
        click.echo(f"  {kind.env:<18} {kind.title}")
        click.echo(f"  {'':<18} agents: {', '.join(kind.agents)}")
    click.echo("hand-made instances (used by suites):")
    for name in shipped_instances():
        click.echo(f"  {name}")


@main.command()
@_argument("spec")
@click.option("--out", "-o", required=True, type=_Path(file_okay=False, path_type=Path),
              help="Folder to write <id>.json files and index.json into; replaced atomically if it is an "
                   "earlier eebench output.")
@click.option("--seeds", help="Seeds for presets, e.g. '0,1,2' or '0-99' (default 0). Suites list their own.")
def generate(spec: str, out: Path, seeds: str | None) -> None:
    """Materialize a suite or presets into instance files.

    SPEC is a suite or generator YAML file, or the name of a shipped suite or preset (see `eebench list`).
    The same SPEC and seeds give the same bytes on every machine. Instance ids become paths: the instance
    'park2026-main/low-small/seed-0' is written to OUT/park2026-main/low-small/seed-0.json.

    \b
      eebench generate park2026-main --out main
      eebench generate high-large --seeds 0-99 --out high-large
      eebench generate my-generator.yaml --seeds 0-9 --out mine
    """
    from eebench.instances import write_instances
    from eebench.suites import resolve_spec

    suite = resolve_spec(spec, _parse_seeds(seeds))
    with _progress(len(suite), "generating") as update:
        entries = write_instances(suite.instances(), out, suite.source(), progress=update)
    click.echo(f"wrote {len(entries)} instances to {out}/ (listed in {out}/index.json)")


@main.command()
@_argument("files", nargs=-1, required=True, type=_Path(path_type=Path))
def validate(files: tuple[Path, ...]) -> None:
    """Check eebench documents: schema, version and meaning.

    Each FILE's kind comes from its `eebench` field (instance, trajectory, generator, suite, index, manifest,
    registry, checkpoints); a .jsonl file is checked line by line, each problem located by line (a .json list: by
    item). Trajectory ids must be unique across the files, and no file may be given twice, as `grade` requires.
    Every problem is printed, one line each; exit code 2 if any.

    \b
      eebench validate main/park2026-main/low-small/seed-0.json
      eebench validate runs.jsonl my-suite.yaml
    """
    from eebench.documents import refuse_given_twice
    from eebench.validation import validate_file

    refuse_given_twice(files)   # as grade refuses it: each of its ids would be read a second time
    problems: list[Any] = []
    seen: dict[str, str] = {}   # trajectory id -> where it was first read, across the files
    for file in files:
        try:
            click.echo(f"ok {file}: {validate_file(file, seen)}")
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)


@main.command()
@_argument("target", metavar="INSTANCE")
@click.option("--bench", type=_BENCH, multiple=True, callback=_one_bench, cls=_OneBenchOption,
              help="Find INSTANCE by id in this folder or bundle (.tar.gz, .zip; verified first) instead of reading "
                   "it as a file.")
@click.option("--seeds", help="Seeds of a preset INSTANCE, e.g. '0-2' (default 0).")
def show(target: str, bench: Path | None, seeds: str | None) -> None:
    """Print instances as text, each drawn by its world kind.

    INSTANCE is an instance file, a folder or bundle of them, a suite or generator spec file, or the name of a
    shipped suite or preset (generated as `eebench generate` would); with --bench, an instance id.

    \b
      eebench show low-small --seeds 0-2
      eebench show park2026-main/low-small/seed-0 --bench main
    """
    from eebench.bundles import open_bench, open_instances
    from eebench.instances import InstanceLibrary

    if bench is not None:
        with open_bench(bench) as opened:
            loaded = InstanceLibrary(opened.root, label=opened.label).get(target)
            click.echo(loaded.kind.render_text(loaded.instance))
        return
    with open_instances(target, _parse_seeds(seeds)) as instances:
        if instances.count == 1:   # one instance: just its drawing
            loaded = next(instances.each)
            click.echo(loaded.kind.render_text(loaded.instance))
            return
        for loaded in instances.each:
            click.echo(f"== {loaded.instance.id} ({loaded.kind.env})")
            click.echo(loaded.kind.render_text(loaded.instance))
            click.echo()


@main.command()
@_argument("target", metavar="INSTANCE_OR_DIR")
@click.option("--agent", required=True,
              help="A baseline agent of the instances' world kind; `eebench list` shows each kind's agents.")
@click.option("--seeds", help="Seeds of the agent's choices, e.g. '0-9' or '0,3' (default 0); each instance is "
                              "played once per seed.")
@click.option("--seed", type=_SEED, help="One seed of the agent's choices (the same as --seeds N).")
@click.option("--instance-seeds", help="When INSTANCE_OR_DIR is a preset: the seeds it is generated at (default 0).")
@click.option("--out", "-o", required=True, type=_Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="JSONL file of trajectories (trajectory/1) to write; - for standard output.")
@click.option("--observations/--no-observations", default=False, show_default=True,
              help="Also record the text observation after each step.")
def play(target: str, agent: str, seeds: str | None, seed: int | None, instance_seeds: str | None, out: Path,
         observations: bool) -> None:
    """Play a baseline agent on instances and write its trajectories.

    INSTANCE_OR_DIR is an instance file, a folder or bundle of them (.tar.gz and .zip too, verified first), a
    suite or generator spec file, or the name of a shipped suite or preset (generated as `eebench generate`
    would). Trajectory ids are <agent>/seed-<seed>/<instance id>.

    \b
      eebench play park2026-main --agent frontier --seed 0 --out frontier.jsonl
      eebench play grams2025-rooms --agent explorer --seeds 0-4 --out explorer.jsonl
    """
    from eebench.agents import play_episode
    from eebench.bundles import open_instances
    from eebench.documents import atomic_file

    if seeds is not None and seed is not None:
        raise InputError("--seed and --seeds: give one of them (--seed N is --seeds N)")
    agent_seeds = _parse_seeds(seeds) or [seed or 0]
    played = steps = 0
    to_stdout = str(out) == "-"
    with open_instances(target, _parse_seeds(instance_seeds, "--instance-seeds"), "--instance-seeds") as instances, \
            (contextlib.nullcontext(sys.stdout) if to_stdout else atomic_file(out)) as handle, \
            _progress(instances.count, f"playing {agent}") as update:
        for loaded in instances.each:
            for agent_seed in agent_seeds:
                trajectory = play_episode(loaded.instance, agent, agent_seed, instance_sha256=loaded.sha256,
                                          observations=observations)
                handle.write(json.dumps(trajectory, ensure_ascii=False, separators=(",", ":")) + "\n")
                steps += len(trajectory["steps"])
            played += 1
            update(1)
    runs = f" x {len(agent_seeds)} seeds" if len(agent_seeds) > 1 else ""
    click.echo(f"played {agent} on {played} instances{runs} ({steps} steps) -> {out}", err=to_stdout)


@main.command()
@_argument("instance")
@click.option("--bench", type=_BENCH, multiple=True, callback=_one_bench, cls=_OneBenchOption,
              help="Find INSTANCE by id in this folder or bundle (.tar.gz, .zip) instead of reading it as a file.")
@click.option("--step", default=0, show_default=True, type=click.IntRange(min=0),
              help="The step to show: what the agent reads before its action number STEP (0 = the first).")
@click.option("--trajectory", type=_Path(exists=True, dir_okay=False, path_type=Path),
              help="JSONL file of trajectories whose first STEP actions are replayed (the one played in INSTANCE).")
@click.option("--trajectory-id", metavar="ID", help="Which trajectory of the file, when several were played in "
              "INSTANCE.")
@click.option("--memory", is_flag=True, help="The memory variant (Park et al., Appendix D): a summary of what was "
              "observed so far follows each observation.")
@click.option("--variant", default="base", show_default=True,
              type=_Choice(PROMPT_VARIANTS),
              help="The strategy sentence of the system prompt (Appendix C.3); base has none.")
@click.option("--format", "fmt", default="text", show_default=True, type=_Choice(["text", "json"]),
              help="text: the system prompt and the turn under [system] and [user] lines; json: the chat messages.")
def prompt(instance: str, bench: Path | None, step: int, trajectory: Path | None, trajectory_id: str | None,
           memory: bool, variant: str, fmt: str) -> None:
    """Print what an agent is shown in INSTANCE at a step: Park et al.'s system prompt and the turn's observation.

    The texts are eebench's templates of the paper's prompt (Appendix C.3; --memory for Appendix D), so that results
    from different labs use one setting. Past step 0 the trajectory's actions are replayed in the world's rules.

    \b
      eebench prompt bench/park2026-main/low-small/seed-0.json
      eebench prompt park2026-main/low-small/seed-0 --bench demo/park2026-main-1.0.0 --step 5 \\
          --trajectory demo/runs/frontier.jsonl --memory
    """
    from eebench.bundles import open_bench
    from eebench.instances import InstanceLibrary, load_instance
    from eebench.prompts import PROMPT_VERSION, shown_at
    from eebench.suites import shipped_instance, shipped_suites

    if trajectory_id is not None and trajectory is None:
        raise InputError("--trajectory-id needs --trajectory FILE")
    with contextlib.ExitStack() as stack:
        if bench is not None:
            opened = stack.enter_context(open_bench(bench))
            loaded = InstanceLibrary(opened.root, label=opened.label).get(instance)
        elif Path(instance).exists():
            loaded = load_instance(instance)
        else:   # an id of a shipped suite's (as `show` and eebench.load take it)
            loaded = shipped_instance(instance)
            if loaded is None:
                raise InputError.at(instance, "no such file, nor the id of a shipped suite's instance (such as "
                                              "park2026-main/low-small/seed-0: a suite or preset holds many, name "
                                              "one); an id of your own needs --bench DIR"
                                              + (near_path(instance)
                                                 or did_you_mean(instance.split("/")[0], shipped_suites())))
    if loaded.kind.env != "grid_dag":  # the templates are Park et al.'s; no other world has a published prompt
        raise InputError.at(loaded.file, f"prompt templates exist for grid_dag instances (Park et al., Appendix "
                                         f"C.3), not for {loaded.kind.env}; `eebench play --observations` records "
                                         "the text a world shows", field="env")
    actions = _trajectory_actions(trajectory, loaded, trajectory_id) if trajectory else []
    shown = shown_at(loaded.instance, actions, step, variant=variant, memory=memory)
    if fmt == "json":
        click.echo(json.dumps({"prompt_version": PROMPT_VERSION, "instance": loaded.instance.id, "step": step,
                               "messages": [{"role": "system", "content": shown.system},
                                            {"role": "user", "content": shown.turn}]}, indent=2, ensure_ascii=False))
        return
    click.echo(f"[system]\n{shown.system}\n\n[user]\n{shown.turn}")


def _trajectory_actions(path: Path, loaded: Any, trajectory_id: str | None) -> list[str | None]:
    """The actions of the one trajectory of `path` played in the instance (or named by id), refused as `grade`
    refuses it when it says it was played in another world or another version of the instance."""
    from eebench.instances import check_played_in, check_trajectory_env
    from eebench.trajectories import check_trajectory, read_records

    instance_id = loaded.instance.id
    found, here = [], []   # (here: the ids played in the instance, for a mistyped --trajectory-id)
    for record in read_records(path):
        doc = check_trajectory(record)
        if doc["instance"] == instance_id:
            here.append(doc["id"])
            if trajectory_id in (None, doc["id"]):
                found.append((doc, record))
    if not found:
        if not trajectory_id:
            raise InputError.at(str(path), f"no trajectory played in {instance_id!r}")
        raise InputError.at(str(path), f"trajectory {trajectory_id!r} is not one played in {instance_id!r}"
                                       f"{did_you_mean(trajectory_id, here)}" + (
                                           f"; played there: {', '.join(map(repr, here[:5]))}"
                                           + (" ..." if len(here) > 5 else "") if here else ""))
    if len(found) > 1:
        ids = ", ".join(repr(d["id"]) for d, _ in found[:5]) + (" ..." if len(found) > 5 else "")
        raise InputError.at(str(path), f"{len(found)} trajectories were played in {instance_id!r} ({ids}); "
                                       "choose one with --trajectory-id ID")
    doc, record = found[0]
    check_trajectory_env(doc.get("env"), loaded, record.file, record.line)
    check_played_in(doc.get("instance_sha256"), loaded.sha256, instance_id, loaded.file, record.file, record.line,
                    "show it with the same instance (the version it was played in)")
    return [step["action"] for step in doc["steps"]]


# -- grading ------------------------------------------------------------------------------------------

class _Workers(click.ParamType):
    """--workers: a count of processes, or 0 / auto for one per core."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and value >= 0:
            return value
        text = str(value).strip().lower()
        if text == "auto":
            return 0
        if not text.isdigit():
            self.fail(f"{value!r} is not a count of processes (0 or auto: one per core){did_you_mean(text, ['auto'])}.",
                      param, ctx)
        return int(text)


_WORKERS = _Workers()


class _ResultsFile(_Path):
    """--db: a DuckDB file's path, refused when it names a pipe, a device or a socket (DuckDB opening a pipe
    waits for a writer forever)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from eebench.evaluator.store import results_file_problem

        path = super().convert(value, param, ctx)
        problem = results_file_problem(Path(path))
        if problem:
            self.fail(f"{quote(str(path), 200)} {problem}", param, ctx)
        return path


_RESULTS_FILE = _ResultsFile(dir_okay=False, path_type=Path)



@main.command()
@_argument("files", metavar="TRAJ_FILE...", nargs=-1, required=True, type=_Path(allow_dash=True, path_type=str))
@click.option("--bench", type=_BENCH, multiple=True, callback=_one_bench, cls=_OneBenchOption,
              help="Folder of instance files (searched recursively), as written by `eebench generate`; or a "
                   "bundle (folder, .tar.gz or .zip) from `eebench publish`, verified first and recorded in every row. "
                   "Not needed when every trajectory is `env: logged`.")
@click.option("--checkpoints", "checkpoint_files", multiple=True, type=_Path(dir_okay=False, path_type=Path),
              help="A checkpoints/1 file for coverage (ECC); repeat for several. A trajectory takes every set of "
                   "these files that matches its instance, or else the shipped sets that match.")
@click.option("--db", default="eebench.duckdb", show_default=True, type=_RESULTS_FILE,
              help="DuckDB file to write results into (created if missing).")
@click.option("--skip-invalid", is_flag=True,
              help="Grade the valid trajectories and list the invalid ones with the reason, instead of stopping.")
@click.option("--workers", default="1", show_default=True, type=_WORKERS,
              help="Processes that grade in parallel, each a piece of the input (a big JSONL file is cut at line "
                   "starts); 0 or auto: one per core. The rows are those of one process. Standard input (-) is "
                   "graded by one. One process already keeps two cores busy (grading, and DuckDB writing): workers "
                   "can pay only beyond two cores, and on two they measured 0.9-1.0x (see the README).")
@click.option("--engine", default="local", show_default=True, type=_Choice(["local", "ray"]),
              help="local: this machine, into --db. ray: one Ray task per TRAJ_FILE (local paths or URIs pyarrow "
                   "reads), Parquet partitions into --out; then `eebench ingest`.")
@click.option("--address", metavar="ADDR", type=_Text(),
              help="With --engine ray: a running Ray cluster (default: start a local one).")
@click.option("--cpus", type=click.IntRange(min=1), help="With --engine ray and no --address: CPUs of the local Ray "
                                                        "(default: every core).")
@click.option("--out", "-o", "parquet_out", metavar="DIR", type=_Text(),
              help="With --engine ray: the new or empty folder (or URI) for the Parquet partitions.")
def grade(files: tuple[str, ...], bench: Path | None, checkpoint_files: tuple[Path, ...], db: Path,
          skip_invalid: bool, workers: int, engine: str, address: str | None, cpus: int | None,
          parquet_out: str | None) -> None:
    """Replay trajectories in their instances and store every metric family's results in DuckDB.

    TRAJ_FILE is a JSONL file of trajectory/1 records (`eebench convert` makes them from agents' logs), or - for
    standard input. Each trajectory names its instance by id; the actions are replayed in the world's rules
    (positions a log claims are never trusted); `env: logged` trajectories are not replayed, only graded for
    coverage and revisits (no --bench needed). An empty file is an error, as in `convert`. Grading a trajectory
    id again replaces its rows. One call is one transaction: if it fails, nothing is written. Then ask questions
    with `eebench query`.

    \b
      eebench grade runs/*.jsonl --bench park2026-main-1.0.0 --db results.duckdb
      eebench grade text-logs.jsonl --checkpoints my-game.yaml --db results.duckdb
      eebench query "SELECT * FROM agent_summary" --db results.duckdb
    """
    from eebench.bundles import open_bench
    from eebench.checkpoints import library
    from eebench.evaluator import grade_files

    if engine == "ray" and workers != 1:
        raise click.UsageError("--workers goes with --engine local (Ray's tasks are its workers: --cpus)")
    if engine == "ray" and click.get_current_context().get_parameter_source("db") is ParameterSource.COMMANDLINE:
        raise click.UsageError("--db goes with --engine local (Ray writes Parquet partitions into --out DIR; "
                               "`eebench ingest DIR --db FILE` loads them)")
    checkpoints = library(checkpoint_files)  # checked before any grading
    if engine == "ray" or address or cpus or parquet_out:
        _grade_ray(files, bench, checkpoints, skip_invalid, engine, address, cpus, parquet_out)  # URIs too
        return
    paths = tuple(map(Path, files))
    with (open_bench(bench) if bench is not None else contextlib.nullcontext()) as opened, \
            _grade_progress(paths) as update:
        report = grade_files(list(paths), opened, db, skip_invalid=skip_invalid, progress=update,
                             checkpoints=checkpoints, workers=workers)
    _echo_problems("skipped", report.skipped, every=True)
    for note in report.coverage_notes:
        click.echo(f"coverage: {note}")
    rate = report.steps / report.seconds if report.seconds else 0.0
    click.echo(f"graded {report.trajectories} trajectories ({report.steps} steps) into {db} "
               f"in {report.seconds:.2f} s ({rate:,.0f} steps/s)" + report.notes())


def _grade_ray(files: tuple[str, ...], bench: Path | None, checkpoints: Any, skip_invalid: bool, engine: str,
               address: str | None, cpus: int | None, parquet_out: str | None) -> None:
    from eebench.bundles import open_bench
    from eebench.engines.ray import grade_ray

    if engine != "ray":
        raise click.UsageError("--address, --cpus and --out go with --engine ray" + (
            " (Parquet partitions); a local grade writes into --db FILE" if parquet_out is not None else ""))
    if parquet_out is None:
        raise click.UsageError("--engine ray writes Parquet partitions: give --out DIR (then `eebench ingest DIR`)")
    if address is not None and cpus is not None:   # (Ray joins the cluster with its own CPUs: --cpus did nothing)
        raise click.UsageError("--cpus sizes the local Ray started without --address; a cluster at --address "
                               "grades on its own CPUs: give one of them")
    with open_bench(bench) if bench is not None else contextlib.nullcontext() as opened:
        report = grade_ray(list(files), opened, parquet_out, address=address, skip_invalid=skip_invalid,
                           num_cpus=cpus, checkpoints=checkpoints)
    _echo_problems("skipped", report.skipped, every=True)
    click.echo(f"graded {report.trajectories} trajectories ({report.steps} steps) from {report.shards} shards "
               f"into {parquet_out} in {report.seconds:.2f} s; load them with: eebench ingest {parquet_out} --db FILE")


@main.command()
@_argument("parquet_dir", metavar="PARQUET_DIR")
@click.option("--db", default="eebench.duckdb", show_default=True, type=_RESULTS_FILE,
              help="DuckDB results file to load into (created if missing).")
def ingest(parquet_dir: str, db: Path) -> None:
    """Load the Parquet partitions of `eebench grade --engine ray` into a results file, in one transaction.

    Trajectory ids graded again replace their rows, as in `grade`; an id in two partitions is refused.

    \b
      eebench grade shards/*.jsonl --bench park2026-main-1.0.0 --engine ray --out parts
      eebench ingest parts --db results.duckdb
    """
    from eebench.engines.ray import ingest as ingest_parquet

    report = ingest_parquet(parquet_dir, db)
    click.echo(f"loaded {report.trajectories} trajectories ({report.steps} steps) from {parquet_dir} into {db}"
               f"{report.notes()}")


# -- frozen versions ----------------------------------------------------------------------------------

@main.command()
@_argument("suite")
@click.option("--version", "version", required=True, help="Version of the bundle: X.Y.Z, e.g. 1.0.0.")
@click.option("--out", "-o", required=True, type=_Path(path_type=Path),
              help="The bundle to write: a new or empty folder, or a file ending in .tar.gz, .tgz or .zip.")
def publish(suite: str, version: str, out: Path) -> None:
    """Freeze a suite as a bundle: its instances, manifest.json (every sha256 and one digest) and a card.

    SUITE is a suite YAML file or the name of a shipped suite (see `eebench bundles`). A bundle is never
    replaced: publishing the same content again does nothing, and other content under the same name and version
    is refused. A folder bundle's files are the same bytes on every machine; an archive's may differ with another
    zlib, but its manifest digest does not. Pinned versions (`eebench bundles`) republish the same digest with
    any later eebench.

    \b
      eebench publish park2026-main --version 1.0.0 --out park2026-main-1.0.0
      eebench publish my-suite.yaml --version 0.1.0 --out my-suite-0.1.0.tar.gz
    """
    from eebench.bundles import publish as publish_bundle

    published = publish_bundle(suite, version, out)
    manifest = published.bundle.manifest
    what = f"{published.bundle.title} ({len(manifest['instances'])} instances)"
    if published.written:
        click.echo(f"published {what} to {out}, digest {manifest['digest']}")
    else:
        click.echo(f"{out} already holds {what} with these bytes, digest {manifest['digest']}; nothing written")


@main.command()
@_argument("bundle", type=_Path(path_type=Path))
@click.option("--digest", help="Also require this bundle digest, e.g. the one a paper cites.")
def verify(bundle: Path, digest: str | None) -> None:
    """Check that a bundle (folder, .tar.gz or .zip) is exactly what was published.

    Recomputes the sha256 of every file and the bundle digest, and prints each changed, missing or extra file,
    one line each, with exit code 2. Exit code 0 only when the bundle is intact.

    \b
      eebench verify park2026-main-1.0.0
      eebench verify my-suite-0.1.0.tar.gz --digest DIGEST
    """
    from eebench.bundles import verify_bundle

    verified = verify_bundle(bundle, digest)
    click.echo(f"intact: {verified.title}, {len(verified.manifest['instances'])} instances, "
               f"digest {verified.manifest['digest']}")


@main.command()
@_argument("folder", required=False, type=_Path(path_type=Path))
def bundles(folder: Path | None) -> None:
    """List the bundles eebench ships, or those found in FOLDER (folders and archives, searched recursively).

    \b
      eebench bundles
      eebench bundles published/
    """
    from eebench.bundles import find_bundles, shipped_listing

    if folder is None:
        click.echo("shipped bundles (eebench publish NAME --version VERSION --out DIR writes one):")
        for b in shipped_listing():
            click.echo(f"  {b.name:<18} {b.version:<8} {b.instances:>4} instances  digest {b.digest}")
            click.echo(f"    eebench publish {b.name} --version {b.version} --out {b.name}-{b.version}")
        return
    found = find_bundles(folder)
    if not found:
        click.echo(f"no bundles in {folder}")
        return
    click.echo(f"bundles in {folder} (eebench verify PATH checks one):")
    notes = {True: "  (the shipped digest)", False: "  (NOT the shipped digest of this name and version)", None: ""}
    for b in found:
        click.echo(f"  {b.name:<18} {b.version:<8} {b.instances:>4} instances  digest {b.digest}  {b.path}"
                   f"{notes[b.shipped]}")


@main.command()
@_argument("sql")
@click.option("--db", default="eebench.duckdb", show_default=True, type=_RESULTS_FILE,
              help="DuckDB file of results.")
@click.option("--format", "fmt", default="table", show_default=True, type=_Choice(["table", "csv", "json"]),
              help="Output format.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True, max=MAX_TIMEOUT_SECONDS), metavar="SECONDS",
              help="Stop the query after this many seconds (default: no limit; at most a year).")
def query(sql: str, db: Path, fmt: str, timeout: float | None) -> None:
    """Run read-only SQL against graded results; rows stream to the output as they are read.

    Tables: trajectories, steps, episodes, checkpoints, meta. Views: agent_summary, preset_summary, case_summary,
    gaps_summary, ecc_curve, coverage_summary, phase_summary (see the README for every column). Read-only is
    enforced by DuckDB: nothing can be written, no other file read, no extension loaded, no setting changed. To
    write tables as files, use `eebench export`.

    \b
      eebench query "SELECT * FROM agent_summary" --db results.duckdb
      eebench query "SELECT case_id, avg(error) FROM steps GROUP BY ALL" --db results.duckdb --format csv
    """
    if timeout is not None and timeout != timeout:   # (nan passes click's range: every comparison is false)
        raise InputError("--timeout: expected a number of seconds, found nan")
    from eebench.evaluator import query_rows
    from eebench.output import stream_rows

    with query_rows(db, sql, timeout=timeout) as result:
        if result.columns:
            for text in stream_rows(result.columns, result.batches, fmt):
                click.echo(text, nl=False, color=True)   # (click drops ANSI codes off a terminal: csv must be exact)


@main.command()
@click.option("--db", default="eebench.duckdb", show_default=True, type=_RESULTS_FILE,
              help="DuckDB file of results (opened read-only).")
@click.option("--out", "-o", required=True, type=_Path(file_okay=False, path_type=Path),
              help="Folder to write <table>.<format> files and export.json into: new, empty, or an earlier export "
                   "(replaced whole, only once every file is written).")
@click.option("--format", "fmt", default="parquet", show_default=True, type=_Choice(["parquet", "csv"]),
              help="File format.")
@click.option("--table", "tables", multiple=True, metavar="NAME",
              help="A table or view to write (repeat for more); default: every table and view.")
def export(db: Path, out: Path, fmt: str, tables: tuple[str, ...]) -> None:
    """Write tables and views of a results file as Parquet or CSV files.

    \b
      eebench export --db results.duckdb --out results-csv --format csv --table agent_summary
    """
    from eebench.evaluator import export as export_tables

    written = export_tables(db, out, fmt, tables)
    what = "table or view" if len(written) == 1 else "tables and views"
    click.echo(f"exported {len(written)} {what} ({sum(e.rows for e in written)} rows) to {out}/: "
               + ", ".join(f"{e.file} ({e.rows})" for e in written))


# -- seeing the results ----------------------------------------------------------------------------------

_WHERE_HELP = ("Only the trajectories matching this SQL condition on the table trajectories, "
               "e.g. \"model = 'gpt-x' AND preset LIKE 'high-%'\".")


@main.command()
@click.option("--db", default="eebench.duckdb", show_default=True, type=_RESULTS_FILE,
              help="DuckDB file of results (from `eebench grade`).")
@click.option("--out", "-o", required=True, type=_Path(dir_okay=False, path_type=Path),
              help="HTML file to write (replaced only when the whole report is made).")
@click.option("--where", help=_WHERE_HELP)
@click.option("--bench", type=_BENCH, multiple=True,
              help="The instances that were graded (folder or bundle; repeat it for several), to draw their maps "
                   "in the replays; without it the replays show only the cells the agents visited.")
@click.option("--seed", default=0, show_default=True, type=_SEED,
              help="Seed of the bootstrap resamples behind the 95% intervals.")
def report(db: Path, out: Path, where: str | None, bench: tuple[Path, ...], seed: int) -> None:
    """Write one self-contained HTML report: the per agent/model/prompt table with bootstrap intervals, the papers'
    figures, and a step-by-step replay of every trajectory. It opens from disk, with no network.

    \b
      eebench report --db results.duckdb --out report.html --bench park2026-main-1.0.0
      eebench report --db results.duckdb --out gpt.html --where "model LIKE 'gpt-%'"
    """
    from eebench.bundles import open_bench
    from eebench.report import write_report

    with contextlib.ExitStack() as stack, _drawn_from(db):
        opened = [stack.enter_context(open_bench(b)) for b in bench]
        written = write_report(db, out, where=where, bench=opened, seed=seed,
                               progress=stack.enter_context(_total_known_later("making replays")))
    click.echo(f"wrote {written.path} ({written.trajectories} trajectories, {written.bytes / 1e6:.1f} MB) "
               f"in {written.seconds:.2f} s")


@contextlib.contextmanager
def _drawn_from(db: Path) -> Iterator[None]:
    """A results file whose values were changed after grading (a NULL where eebench writes a number, a world
    kind it does not know, a column of another type) breaks the drawing somewhere inside it: one line naming the
    file and what broke, not a traceback. (The checks of the file's tables and schema come first, in
    load_results; what they let through is read as eebench wrote it.)"""
    try:
        yield
    except (TypeError, ValueError, KeyError, IndexError, ArithmeticError) as exc:
        raise InputError.at(str(db), f"cannot be drawn: {type(exc).__name__}: {exc}; was it changed after "
                                     "grading? grade the trajectories again into another --db (if it was not, "
                                     "this is eebench's fault: please report it)") from None


def _plot_epilog() -> str:
    import textwrap

    from eebench.report.kinds import FIGURE_KINDS
    width = max(map(len, FIGURE_KINDS)) + 1   # (the texts line up after the longest name)
    return "\b\nKINDS:\n" + "\n".join(textwrap.fill(text, 96, initial_indent=f"  {name:<{width}} ",
                                                     subsequent_indent=" " * (width + 3))
                                       for name, text in FIGURE_KINDS.items())


@main.command(epilog=_plot_epilog())
@_argument("kind")
@click.option("--db", default="eebench.duckdb", show_default=True, type=_RESULTS_FILE,
              help="DuckDB file of results (from `eebench grade`).")
@click.option("--out", "-o", required=True, type=_Path(dir_okay=False, path_type=Path),
              help="Figure file to write: .png, .svg or .pdf.")
@click.option("--where", help=_WHERE_HELP)
@click.option("--trajectory", metavar="ID", help="replay: the trajectory to draw (default: the first selected).")
@click.option("--model", help="prompts: the model whose prompts are compared (default: the one with the most).")
@click.option("--step", type=click.IntRange(min=0), help="replay: draw the path up to this step (default: all).")
@click.option("--bench", type=_BENCH, multiple=True, callback=_one_bench, cls=_OneBenchOption,
              help="replay: the instances that were graded, to draw the map.")
@click.option("--seed", default=0, show_default=True, type=_SEED,
              help="Seed of the bootstrap resamples behind the intervals.")
def plot(kind: str, db: Path, out: Path, where: str | None, trajectory: str | None, model: str | None,
         step: int | None, bench: Path | None, seed: int) -> None:
    """Draw one of the report's figures as a static image for a paper (KIND below).

    \b
      eebench plot figure1 --db results.duckdb --out figure1.pdf
      eebench plot replay --db results.duckdb --trajectory ID --step 20 --bench park2026-main-1.0.0 --out r.png
    """
    from eebench.bundles import open_bench
    from eebench.report.figures import draw

    with contextlib.ExitStack() as stack, _drawn_from(db):
        opened = stack.enter_context(open_bench(bench)) if bench is not None else None
        draw(kind, db, out, where=where, trajectory=trajectory, step=step, bench=opened, seed=seed, model=model)
    click.echo(f"wrote {out}")


# -- adapters ------------------------------------------------------------------------------------------

@main.command()
@_argument("inputs", metavar="INPUT...", nargs=-1, required=True, type=_Path(allow_dash=True, path_type=Path))
@click.option("--from", "fmt", default="auto", show_default=True, metavar="FORMAT",
              help="The log format (see `eebench formats`); auto asks every adapter whether it reads the file.")
@click.option("--out", "-o", required=True, type=_Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="JSONL file of trajectory/1 records to write (replaced only when the whole run succeeds); "
                   "- for standard output.")
@click.option("--bench", type=_BENCH, multiple=True, callback=_one_bench, cls=_OneBenchOption,
              help="The instances the logs were played in (a folder or a bundle, as for `grade --bench`): each "
                   "trajectory's instance must be one of them, and its sha256 is recorded.")
@click.option("--instance", metavar="ID", type=_Text(), help="Every episode was played in this instance (e.g. "
              "park2026-main/low-small/seed-0).")
@click.option("--instance-field", metavar="PATH", help="Or: each record names its instance in this field, a dotted "
              "path such as task_id or metadata.instance.")
@click.option("--instance-from-name", metavar="REGEX", help="Or: each file's name (without .json etc.) names its "
              "instance: the group 'instance', or all groups joined by '/', e.g. "
              "'__(park2026-main)__(.+)__(seed-\\d+)$'; "
              "groups named model, name, prompt or harness set those labels. A name it does not match is searched "
              "in the file's path (folders that name the task: '(?P<instance>[^/]+)__[^/]+/agent/trajectory$').")
@click.option("--env", type=_Choice(["grid_dag", "rooms", "logged"]),
              help="grid_dag or rooms: a world of eebench's, graded by replay (actions read in its words). logged: "
                   "another environment, kept as text. "
                   "Default: graded when the instance is named or known (in --bench, else a shipped suite), "
                   "else logged.")
@click.option("--actions", "vocabulary", type=_Choice(["grid", "rooms", "text"]),
              help="How actions read: grid moves (North, 'move up', UP -> up), room-world objects ('<red ball>'), "
                   "or text as written. Default: the words of the instance's world kind (grid when unknown), text for "
                   "logged.")
@click.option("--action-regex", metavar="REGEX", type=_Text(),
              help="For unusual harnesses: tried before the built-in rules, the action is this pattern's group "
                   "'action' (or group 1) in the model's text, last match wins, e.g. 'MOVE=(\\w+)'.")
@click.option("--agent-name", help="Agent label for every trajectory (wins over the log's).")
@click.option("--model", help="Model label (wins over the log's).")
@click.option("--prompt", help="Prompt label (wins over the log's).")
@click.option("--harness", help="Harness label (wins over the log's).")
@click.option("--skip-invalid", is_flag=True,
              help="Convert the valid records and list the invalid ones with the reason, instead of stopping.")
@click.option("--workers", default="auto", show_default=True, type=_WORKERS,
              help="Processes that convert a large JSON Lines log (32 MB or more, of a format with one episode per "
                   "line, such as openai-chat) in pieces, in parallel; auto: one per core, 1: this process alone. "
                   "The output and the summary are the same whatever the number.")
def convert(inputs: tuple[Path, ...], fmt: str, out: Path, bench: Path | None, instance: str | None,
            instance_field: str | None, instance_from_name: str | None, env: str | None, vocabulary: str | None,
            action_regex: str | None, agent_name: str | None, model: str | None, prompt: str | None,
            harness: str | None, skip_invalid: bool, workers: int) -> None:
    """Turn agents' logs into canonical trajectories (trajectory/1 JSON Lines).

    INPUT is a log file, a folder of logs (files no adapter reads are listed and left out) or - for standard
    input. Everything the log knew is kept: the model's full output (`raw`), reasoning, observations, tokens,
    timing. An output from which no action can be read becomes a step with action null (graded as an
    inadmissible move, as it cost the agent in the episode); such steps are counted and located below. Then grade:

    \b
      eebench convert run.jsonl --bench demo/park2026-main-1.0.0 --out traj.jsonl
      eebench grade traj.jsonl --bench demo/park2026-main-1.0.0
    """
    from eebench.adapters import ConvertOptions, convert_files
    from eebench.adapters.convert import KnownInstances
    from eebench.bundles import open_bench

    labels = {k: v for k, v in (("name", agent_name), ("model", model), ("prompt", prompt), ("harness", harness))
              if v is not None}
    options = ConvertOptions(instance=instance, instance_field=instance_field, instance_from_name=instance_from_name,
                             env=env, vocabulary=vocabulary, action_regex=action_regex, labels=labels,
                             skip_invalid=skip_invalid)
    options.readers()  # refuse options that do not fit before a bundle is opened
    total = sum(f.stat().st_size for f in inputs if f.is_file())
    with contextlib.ExitStack() as stack:
        if bench is not None:
            options = dataclasses.replace(options, known=KnownInstances(stack.enter_context(open_bench(bench))))
        update = stack.enter_context(_progress(total, "converting", in_bytes=True))
        report = convert_files(list(inputs), fmt, out, options, progress=update, workers=workers)
    _echo_problems("skipped", report.skipped, every=True)
    say = functools.partial(click.echo, err=str(out) == "-")   # the trajectories own standard output
    formats = sorted(set(report.formats.values()))
    say(f"converted {report.trajectories} trajectories ({report.steps} steps) from {report.files} file(s) "
        f"read as {', '.join(formats)} -> {out}" + (f"; skipped {len(report.skipped)}" if report.skipped else ""))
    if report.ignored:
        more = len(report.ignored) - 5
        shown = ", ".join(report.ignored[:5]) + (f" and {more} more" if more > 0 else "")
        say(f"left out {len(report.ignored)} file(s) of the folder(s) that no adapter reads: {shown}")
    if report.unreadable:
        more = report.unreadable - len(report.unreadable_at)
        say(f"{report.unreadable} steps had no readable action (kept with action null): "
            + ", ".join(report.unreadable_at) + (f" and {more} more" if more else "")
            + "; --action-regex REGEX reads an unusual answer style")
    if report.logged:
        say(f"{report.logged} trajectories are 'logged' (kept as text: graded for coverage and revisits, not "
            f"replayed): their instance, e.g. {report.logged_example!r}, is not a known one; to grade them by "
            "replay, convert again with --bench BENCH, --instance ID, --instance-field PATH or "
            "--instance-from-name REGEX")


@main.command()
@click.option("--format", "fmt", default="table", show_default=True, type=_Choice(["table", "json"]),
              help="table for people, json for programs.")
def formats(fmt: str) -> None:
    """List the log formats `eebench convert --from` reads: what each reads, an example, what it never carries.

    Fields a format never carries are left out of its trajectories (never written as zero). Third-party
    formats arrive as plug-ins through the `eebench.adapters` entry-point group.

    \b
      eebench formats
      eebench formats --format json
    """
    from eebench.adapters import STEP_FIELDS, known_adapters

    found = known_adapters()
    rows = [{"name": name, "origin": r.origin, "reads": r.adapter.summary, "suffixes": list(r.adapter.suffixes),
             "example": r.adapter.example, "never_carries": [f for f in STEP_FIELDS if f in r.adapter.never_carries]}
            for name, r in found.adapters.items()]
    if fmt == "json":
        click.echo(json.dumps({"formats": rows, "problems": found.problems}, indent=2))
        return
    for row in rows:
        click.echo(f"{row['name']}" + ("" if row["origin"] == "built-in" else f"  ({row['origin']})"))
        click.echo(f"  reads:         {row['reads']}")
        click.echo(f"  example:       {row['example']}")
        click.echo(f"  never carries: {', '.join(row['never_carries']) or '-'}")
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)


@main.command()
@_argument("kind")
def schema(kind: str) -> None:
    """Print the JSON Schema of a document kind: instance, trajectory, generator, suite, index, manifest, ...

    World-specific kinds take the world after a dot (instance.grid_dag, generator.rooms); 'instance' and
    'generator' alone mean those of the default world, grid_dag.

    \b
      eebench schema trajectory
      eebench schema generator.rooms > generator.rooms.json
    """
    from eebench.documents import load_schema, schema_names
    from eebench.errors import did_you_mean, one_of
    from eebench.world.kinds import DEFAULT_ENV

    aliases = {"instance": f"instance.{DEFAULT_ENV}", "generator": f"generator.{DEFAULT_ENV}"}
    names = [*aliases, *schema_names()]
    if kind not in names:  # suggest among the short names too: 'instanse' is meant as 'instance'
        raise InputError(f"unknown schema {kind!r}{did_you_mean(kind, names)}; known: {one_of(names)}")
    click.echo(json.dumps(load_schema(aliases.get(kind, kind)), indent=2))


def run() -> NoReturn:
    """The `eebench` program (its script and `python -m eebench`): `main`, then the process ends at once.

    By then a command has closed its files, removed its temporary files and folders, joined its threads and
    stopped its worker processes; what is left is Python's teardown of every module (NumPy, DuckDB, numba), which
    took 45-60 ms of a one-trajectory grade. So the output is flushed and the process ends without it. A caller
    that runs `main` itself (a test, a program of its own) keeps Python's exit."""
    # standard output is UTF-8, as every file eebench writes (and `convert --out -`): a latin-1 locale's encoding
    # ended `show` or `query` of a name it lacks in a traceback, and `play --out -` wrote other bytes than a file.
    # A file name that is not UTF-8 is printed back as its bytes, as the C locale does (en_US.UTF-8 writes strictly:
    # `generate --out` such a folder wrote it, then ended in a traceback)
    if isinstance(sys.stdout, io.TextIOWrapper) and (codecs.lookup(sys.stdout.encoding).name, sys.stdout.errors) != (
            "utf-8", "surrogateescape"):
        sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")
    try:
        main(prog_name="eebench")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):   # (a message, as sys.exit("...") gives: shown, exit 1)
        click.echo(code, err=True)
        code = 1
    try:
        sys.stdout.flush()
    except ValueError:   # (a stream closed)
        pass
    except OSError as exc:   # (a reader that went away, or an output that could not be written)
        if exc.errno in _OUTPUT_ERRNOS and not code:
            _say_output_failed(exc)
            code = 2
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    run()
