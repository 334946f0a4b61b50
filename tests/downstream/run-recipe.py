"""run-recipe.py — the engine of tests/downstream/run-recipe (read that first).

    /usr/bin/python3 run-recipe.py validate GITHUB_YML GITLAB_YML
    /usr/bin/python3 run-recipe.py github GITHUB_YML --state FILE [options]
    /usr/bin/python3 run-recipe.py gitlab GITLAB_YML --state FILE [options]

`validate` checks the structure of both CI files. `github` runs the job of a GitHub
Actions workflow as the hosted runner would: each `run:` block verbatim, in order, with
`bash --noprofile --norc -eo pipefail FILE`, as --user, with the workflow's, the job's
and the step's env:, the runner's variables and the GITHUB_ENV / GITHUB_PATH /
GITHUB_OUTPUT files; `if:` conditions are evaluated; `uses:` steps are replaced by this
script's own equivalents. `gitlab` runs a GitLab job's before_script and script lines
in one bash -eo pipefail shell, as the Docker executor does. Both write a JSON summary
of every step to --state.

Expressions understood (anything else is refused): ${{ ctx.path }} with the contexts
env, vars, runner (temp, os, arch), github (workspace) and steps (<id>.outcome,
.conclusion, .outputs.<name>); in if:, string literals, == != ! && || ( ) and
success(), failure(), always(), cancelled().
"""
import argparse
import glob
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time

import yaml

STD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STEP_KEYS = {"name", "id", "if", "run", "uses", "with", "env", "shell",
             "working-directory", "continue-on-error", "timeout-minutes"}
# The actions this script knows how to stand in for, by name without the version.
KNOWN_ACTIONS = {"actions/checkout", "actions/upload-artifact"}
GITLAB_RESERVED = {"stages", "variables", "default", "include", "workflow", "image",
                   "services", "before_script", "after_script", "cache"}


class RecipeError(Exception):
    """The CI file is not what this script can run faithfully."""


# --- expressions ------------------------------------------------------------------------

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|!|\(|\))"
                   r"|(?P<id>[A-Za-z_][A-Za-z0-9_.-]*))")


def tokenize(text):
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise RecipeError(f"expression '{text}': cannot read from '{text[pos:]}'")
        pos = m.end()
        kind = m.lastgroup
        val = m.group(kind)
        out.append((kind, val[1:-1].replace("''", "'") if kind == "str" else val))
    return out


class Expr:
    """A recursive-descent evaluator of the small part of GitHub's expression language
    the recipe uses. ctx(path) resolves a context path; status(fn) a status function."""

    def __init__(self, text, ctx, status):
        self.toks, self.i, self.ctx, self.status, self.text = tokenize(text), 0, ctx, status, text

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, val=None):
        tok = self.peek()
        if tok[0] is None or (val is not None and tok[1] != val):
            raise RecipeError(f"expression '{self.text}': expected {val or 'more'}")
        self.i += 1
        return tok

    def run(self):
        v = self.or_()
        if self.i != len(self.toks):
            raise RecipeError(f"expression '{self.text}': unexpected '{self.peek()[1]}'")
        return v

    def or_(self):
        v = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            r = self.and_()
            v = v if truthy(v) else r
        return v

    def and_(self):
        v = self.unary()
        while self.peek() == ("op", "&&"):
            self.take()
            r = self.unary()
            v = r if truthy(v) else v
        return v

    def unary(self):
        if self.peek() == ("op", "!"):
            self.take()
            return not truthy(self.unary())
        v = self.primary()
        if self.peek() in (("op", "=="), ("op", "!=")):
            op = self.take()[1]
            same = as_str(v).casefold() == as_str(self.primary()).casefold()
            return same if op == "==" else not same
        return v

    def primary(self):
        kind, val = self.take()
        if kind == "str":
            return val
        if (kind, val) == ("op", "("):
            v = self.or_()
            self.take(")")
            return v
        if kind == "id" and self.peek() == ("op", "("):
            self.take()
            self.take(")")
            return self.status(val)
        if kind == "id":
            return self.ctx(val)
        raise RecipeError(f"expression '{self.text}': unexpected '{val}'")


def truthy(v):
    return bool(v) if not isinstance(v, str) else v != ""


def as_str(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


STATUS_FUNCS = {"success", "failure", "always", "cancelled"}
SUBST = re.compile(r"\$\{\{(.*?)\}\}")


def uses_status(text):
    return any(kind == "id" and val in STATUS_FUNCS for kind, val in tokenize(text))


# --- the GitHub job ----------------------------------------------------------------------

def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def github_job(doc):
    """The workflow's one job, after the structure checks."""
    if not isinstance(doc, dict):
        raise RecipeError("not a mapping at the top")
    on = doc.get(True, doc.get("on"))   # YAML 1.1 reads a bare `on` key as true
    if not on:
        raise RecipeError("no 'on:' triggers")
    jobs = doc.get("jobs")
    if not isinstance(jobs, dict) or len(jobs) != 1:
        raise RecipeError("want exactly one job under 'jobs:'")
    (name, job), = jobs.items()
    if job.get("runs-on") != "ubuntu-24.04":
        raise RecipeError(f"job {name}: runs-on is {job.get('runs-on')!r}, want ubuntu-24.04")
    steps = job.get("steps")
    if not isinstance(steps, list) or not steps:
        raise RecipeError(f"job {name}: no steps")
    ids = set()
    for n, st in enumerate(steps, 1):
        where = f"job {name}, step {n} ({st.get('name', '?')})"
        if not isinstance(st, dict) or set(st) - STEP_KEYS:
            raise RecipeError(f"{where}: unknown keys {sorted(set(st) - STEP_KEYS)}")
        if ("run" in st) == ("uses" in st):
            raise RecipeError(f"{where}: want exactly one of run: and uses:")
        if "name" not in st:
            raise RecipeError(f"{where}: no name:")
        if "run" in st:
            if "${{" in st["run"]:
                raise RecipeError(f"{where}: a ${{{{ }}}} expression in run: (use env:)")
            if st.get("shell", "bash") != "bash":
                raise RecipeError(f"{where}: shell {st['shell']!r}, want bash")
        elif st["uses"].split("@")[0] not in KNOWN_ACTIONS:
            raise RecipeError(f"{where}: no stand-in for action {st['uses']}")
        if "id" in st:
            if st["id"] in ids:
                raise RecipeError(f"{where}: duplicate id {st['id']}")
            ids.add(st["id"])
    return name, job


def validate_gitlab(doc):
    if not isinstance(doc, dict):
        raise RecipeError("gitlab: not a mapping at the top")
    jobs = {k: v for k, v in doc.items() if not k.startswith(".") and k not in GITLAB_RESERVED}
    if len(jobs) != 1:
        raise RecipeError(f"gitlab: want exactly one job, found {sorted(jobs)}")
    (name, job), = jobs.items()
    if job.get("image") != "debian:bookworm":
        raise RecipeError(f"gitlab job {name}: image {job.get('image')!r}, want debian:bookworm")
    for key in ("before_script", "script"):
        lines = job.get(key, [])
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise RecipeError(f"gitlab job {name}: {key} must be a list of strings")
    if not job.get("script"):
        raise RecipeError(f"gitlab job {name}: no script")
    art = job.get("artifacts", {})
    if art.get("when") != "on_failure" or not art.get("paths"):
        raise RecipeError(f"gitlab job {name}: want artifacts with when: on_failure and paths")
    if not isinstance(job.get("variables", {}), dict):
        raise RecipeError(f"gitlab job {name}: variables must be a mapping")
    return name, job


def shellcheck(label, text):
    """shellcheck a run: block or a job's script as bash (when shellcheck is installed)."""
    p = subprocess.run(["shellcheck", "-s", "bash", "-"], input=text, text=True,
                       capture_output=True)
    if p.returncode:
        raise RecipeError(f"shellcheck {label}:\n{p.stdout}")


def cmd_validate(args):
    _, job = github_job(load_yaml(args.github))
    name, gl = validate_gitlab(load_yaml(args.gitlab))
    if shutil.which("shellcheck"):
        for n, st in enumerate(job["steps"], 1):
            if "run" in st:
                shellcheck(f"github step {n} ({st['name']})", st["run"])
        shellcheck(f"gitlab job {name}", "\n".join(gl.get("before_script", []) + gl["script"]))
        print("shellcheck: every run: block and the GitLab script are clean")
    else:
        print("shellcheck: not installed, the run: blocks were not linted")
    ids = [s.get("id") for s in job["steps"] if s.get("id")]
    for want in args.require_id or []:
        if want not in ids:
            raise RecipeError(f"github: no step with id {want} (the recipe checks it)")
    print(f"github-actions.yml: 1 job, runs-on ubuntu-24.04, {len(job['steps'])} steps "
          f"({sum('run' in s for s in job['steps'])} run:, "
          f"{sum('uses' in s for s in job['steps'])} uses:), step ids {', '.join(ids)}")
    print(f"gitlab-ci.yml: job {name}, image {gl['image']}, "
          f"{len(gl.get('before_script', []))} before_script + {len(gl['script'])} script "
          f"lines, artifacts on failure: {', '.join(gl['artifacts']['paths'])}")


class Job:
    """Runs steps as a user, with a runner's environment, and records them."""

    def __init__(self, args):
        self.args = args
        self.user = args.user
        self.pw = pwd.getpwnam(args.user)
        self.logs = args.logs
        self.steps = []          # the JSON summary
        self.failed = False
        self.deadline = time.monotonic() + args.job_timeout

    def chown(self, path):
        if os.geteuid() == 0:
            for root, dirs, files in os.walk(path):
                for p in [root] + [os.path.join(root, x) for x in dirs + files]:
                    os.lchown(p, self.pw.pw_uid, self.pw.pw_gid)

    def base_env(self):
        return {"HOME": self.pw.pw_dir, "USER": self.user, "LOGNAME": self.user,
                "SHELL": "/bin/bash", "PATH": STD_PATH, "LANG": "C.UTF-8"}

    def run_script(self, label, text, env, cwd, timeout):
        """Run text with bash -eo pipefail as the user; stream its output; return rc."""
        n = len(self.steps) + 1
        script = os.path.join(self.args.scripts, f"step-{n:02d}.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        self.chown(self.args.scripts)
        log = os.path.join(self.logs, f"step-{n:02d}.log")
        argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", script]
        if os.geteuid() == 0 and self.user != "root":
            argv = ["runuser", "-u", self.user, "--", "/usr/bin/env", "-i"] + \
                   [f"{k}={v}" for k, v in env.items()] + argv
            env = None
        with open(log, "wb") as out:
            p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        rc = stream_until_exit(p, log, timeout, label)
        return rc, log

    def timeout_for(self, minutes):
        left = self.deadline - time.monotonic()
        cap = self.args.step_timeout if minutes is None else minutes * 60
        return max(1.0, min(left, cap))


def stream_until_exit(p, log, timeout, label):
    """Print the log as it grows until p exits; kill its tree after timeout s."""
    start, pos = time.monotonic(), 0
    while True:
        rc = p.poll()
        pos = print_new(log, pos)
        if rc is not None:
            print_new(log, pos)
            return rc
        if time.monotonic() - start > timeout:
            print(f"  !! {label}: still running after {timeout:.0f} s: killing it")
            kill_tree(p.pid)
            p.wait()
            print_new(log, pos)
            return 124
        time.sleep(0.1)


def print_new(log, pos):
    with open(log, "rb") as f:
        f.seek(pos)
        data = f.read()
    if data:
        for line in data.decode("utf-8", "replace").splitlines(keepends=True):
            sys.stdout.write("  | " + line if line.endswith("\n") else "  | " + line + "\n")
        sys.stdout.flush()
    return pos + len(data)


def kill_tree(pid):
    """SIGKILL pid and every descendant (found through /proc's ppid links)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", encoding="utf-8") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    pending, tree = [pid], []
    while pending:
        q = pending.pop()
        tree.append(q)
        pending.extend(children.get(q, []))
    for q in tree:
        try:
            os.kill(q, signal.SIGKILL)
        except OSError:
            pass


def read_env_file(path):
    """GITHUB_ENV / GITHUB_OUTPUT: NAME=value lines and NAME<<DELIM heredocs."""
    out = {}
    if not os.path.exists(path):
        return out
    lines = open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        if "=" in line:
            name, val = line.split("=", 1)
            out[name] = val
        i += 1
    return out


class GitHubRun(Job):
    def __init__(self, args):
        super().__init__(args)
        self.doc = load_yaml(args.file)
        self.jobname, self.job = github_job(self.doc)
        self.vars = dict(v.split("=", 1) for v in args.var or [])
        self.gh_env, self.gh_path, self.outputs = {}, [], {}
        self.runner = {"temp": args.runner_temp, "os": "Linux", "arch": "X64"}
        self.env_ctx = {}

    # contexts for expressions
    def ctx(self, path):
        head, _, rest = path.partition(".")
        if head == "env":
            return self.env_ctx.get(rest, "")
        if head == "vars":
            return self.vars.get(rest, "")
        if head == "runner" and rest in self.runner:
            return self.runner[rest]
        if head == "github" and rest == "workspace":
            return self.args.workspace
        if head == "steps":
            sid, _, what = rest.partition(".")
            st = next((s for s in self.steps if s.get("id") == sid), None)
            if st is None:
                return ""
            if what in ("outcome", "conclusion"):
                return st["outcome"]
            if what.startswith("outputs."):
                return self.outputs.get(sid, {}).get(what[8:], "")
        raise RecipeError(f"no stand-in for the context {path}")

    def status(self, fn):
        if fn not in STATUS_FUNCS:
            raise RecipeError(f"unknown function {fn}()")
        return {"success": not self.failed, "failure": self.failed, "always": True,
                "cancelled": False}[fn]

    def subst(self, value):
        if not isinstance(value, str):
            return as_str(value)
        return SUBST.sub(lambda m: as_str(Expr(m.group(1), self.ctx, self.status).run()), value)

    def condition(self, text):
        if text is None:
            return not self.failed
        text = str(text).strip()
        m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
        text = m.group(1) if m else text
        v = truthy(Expr(text, self.ctx, self.status).run())
        return v and not self.failed if not uses_status(text) else v

    def env_for(self, step):
        env = self.base_env()
        env.update({"CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_OS": "Linux",
                    "RUNNER_ARCH": "X64", "RUNNER_TEMP": self.args.runner_temp,
                    "GITHUB_WORKSPACE": self.args.workspace,
                    "GITHUB_REPOSITORY": "local/odp-downstream", "GITHUB_JOB": self.jobname})
        self.env_ctx = {}
        for level in (self.doc.get("env", {}), self.job.get("env", {})):
            for k, v in level.items():
                self.env_ctx[k] = self.subst(v)
        self.env_ctx.update(self.gh_env)
        step_env = {k: self.subst(v) for k, v in (step.get("env") or {}).items()}
        env.update(self.env_ctx)
        env.update(step_env)
        env["PATH"] = ":".join(list(reversed(self.gh_path)) + [env["PATH"]])
        return env

    def record(self, n, step, outcome, secs=0.0, note="", log=None):
        entry = {"n": n, "name": step.get("name"), "id": step.get("id"),
                 "kind": "run" if "run" in step else "uses: " + step["uses"],
                 "outcome": outcome, "seconds": round(secs, 1), "note": note, "log": log}
        self.steps.append(entry)
        mark = {"success": "ok", "failure": "FAILED", "skipped": "skipped"}[outcome]
        print(f"== step {n} [{mark}] {step.get('name')}" + (f" -- {note}" if note else ""))
        sys.stdout.flush()

    def files(self, n):
        """Fresh GITHUB_ENV, GITHUB_PATH, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY for step n."""
        d = os.path.join(self.args.runner_temp, "_runner_file_commands")
        os.makedirs(d, exist_ok=True)
        paths = {k: os.path.join(d, f"{k.lower()}_{n}") for k in
                 ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
        for p in paths.values():
            open(p, "w").close()
        self.chown(d)
        return paths

    def absorb(self, sid, paths):
        self.gh_env.update(read_env_file(paths["GITHUB_ENV"]))
        for line in open(paths["GITHUB_PATH"], encoding="utf-8").read().splitlines():
            if line.strip():
                self.gh_path.append(line.strip())
        if sid:
            self.outputs[sid] = read_env_file(paths["GITHUB_OUTPUT"])

    def run(self):
        print(f"== job {self.jobname} (runs-on {self.job['runs-on']}) as user {self.user}")
        for n, step in enumerate(self.job["steps"], 1):
            sid = step.get("id")
            self.env_for(step)             # the env context of this step's if:
            if sid in self.args.replace_ids:
                self.replace_install(n, step)
                continue
            if not self.condition(step.get("if")):
                why = f"if: {step['if']} is false" if "if" in step else \
                    "an earlier step failed (no if:, so success() is implied)"
                self.record(n, step, "skipped", note=why)
                continue
            if "uses" in step:
                self.stand_in(n, step)
                continue
            self.run_step(n, step)
        return self.steps

    def run_step(self, n, step):
        paths = self.files(n)
        env = self.env_for(step)
        env.update(paths)
        cwd = step.get("working-directory", self.args.workspace)
        print(f"== step {n}: {step['name']}" + (f" (id {step['id']})" if "id" in step else ""))
        t0 = time.monotonic()
        rc, log = self.run_script(step["name"], step["run"], env, cwd,
                                  self.timeout_for(step.get("timeout-minutes")))
        self.absorb(step.get("id"), paths)
        ok = rc == 0
        if not ok and not step.get("continue-on-error"):
            self.failed = True
        self.record(n, step, "success" if ok else "failure", time.monotonic() - t0,
                    "" if ok else f"exit status {rc}", log)

    def replace_install(self, n, step):
        if self.args.prefix_bin and self.args.prefix_bin not in self.gh_path:
            self.gh_path.append(self.args.prefix_bin)
        self.record(n, step, "skipped",
                    note=f"REPLACED: odpemu is already installed in {self.args.prefix} "
                         f"(--prefix); PATH += {self.args.prefix_bin}, as the step's "
                         "GITHUB_PATH line would do")

    def stand_in(self, n, step):
        action = step["uses"].split("@")[0]
        t0 = time.monotonic()
        if action == "actions/checkout":
            copy_repo(self.args.repo, self.args.workspace, self.args.broken)
            self.chown(self.args.workspace)
            note = f"STAND-IN: copied {self.args.repo} into the workspace" + \
                (", with the failure drill's bug planted" if self.args.broken else "")
        else:
            with_ = {k: self.subst(v) for k, v in (step.get("with") or {}).items()}
            dest = os.path.join(self.args.artifacts, with_.get("name", "artifact"))
            got = collect(with_.get("path", ""), dest)
            note = f"STAND-IN: {len(got)} files copied to {dest}"
            for g in got:
                print(f"  | artifact: {g}")
        self.record(n, step, "success", time.monotonic() - t0, note)


# The failure drill's bug: the client corrupts one byte of its WRITE data after filling
# it, so the server's check fails as it would on a real data-path bug.
BREAK_AT = "\tfill(s->buf[0], s->len[0], s->seed, 0);\n"
BREAK_WITH = BREAK_AT + "\ts->buf[0][s->len[0] / 2] ^= 0x5a;\t/* run-recipe's failure drill */\n"


def copy_repo(src, dst, broken=False):
    """The user's repository: the project's files, not the recipe's own or build output.
    broken: plant the failure drill's bug in the copy."""
    skip = {"run-recipe", "run-recipe.py", "odp_pingpong", "__pycache__"}
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name in skip or name.endswith(".o"):
            continue
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if os.path.isdir(s):
            shutil.copytree(s, d)
        else:
            shutil.copy2(s, d)
    if broken:
        path = os.path.join(dst, "odp_pingpong.c")
        text = open(path, encoding="utf-8").read()
        if text.count(BREAK_AT) != 1:
            raise RecipeError("failure drill: the line to break is not in odp_pingpong.c")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(BREAK_AT, BREAK_WITH))


def collect(paths_text, dest):
    """upload-artifact's path: (lines, globs, directories) copied under dest."""
    got = []
    os.makedirs(dest, exist_ok=True)
    for pattern in [x.strip() for x in paths_text.splitlines() if x.strip()]:
        for p in sorted(glob.glob(pattern)):
            if os.path.isdir(p):
                for root, _, files in os.walk(p):
                    for f in files:
                        src = os.path.join(root, f)
                        rel = os.path.relpath(src, os.path.dirname(p.rstrip("/")))
                        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
                        shutil.copy2(src, os.path.join(dest, rel))
                        got.append(rel)
            else:
                shutil.copy2(p, os.path.join(dest, os.path.basename(p)))
                got.append(os.path.basename(p))
    return got


def cmd_github(args):
    run = GitHubRun(args)
    steps = run.run()
    state = {"job": run.jobname, "failed": run.failed, "steps": steps,
             "env": {k: run.subst(v) for k, v in run.job.get("env", {}).items()}}
    with open(args.state, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    return 1 if run.failed else 0


# --- the GitLab job ------------------------------------------------------------------------

VARREF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand(value, env):
    """GitLab expands $NAME and ${NAME} in a variable's value (unknown: empty)."""
    return VARREF.sub(lambda m: env.get(m.group(1) or m.group(2), ""), str(value))


def cmd_gitlab(args):
    doc = load_yaml(args.file)
    name, job = validate_gitlab(doc)
    j = Job(args)
    env = j.base_env()
    env.update({"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": args.workspace,
                "CI_JOB_NAME": name, "CI_JOB_STATUS": "running"})
    if args.prefix_bin:
        env["PATH"] = args.prefix_bin + ":" + env["PATH"]
    for level in (doc.get("variables", {}), job.get("variables", {})):
        for k, v in level.items():
            env[k] = expand(v, env)
    # Project CI/CD variables outrank the file's (what --var stands for).
    env.update(dict(v.split("=", 1) for v in args.var or []))
    copy_repo(args.repo, args.workspace, args.broken)
    j.chown(args.workspace)
    lines = job.get("before_script", []) + job["script"]
    text = "".join(f"echo {shell_quote('$ ' + ln.splitlines()[0])}\n{ln}\n" for ln in lines)
    print(f"== gitlab job {name} (image {job['image']}) as user {j.user}:"
          f" {len(lines)} lines in one shell")
    t0 = time.monotonic()
    rc, log = j.run_script(name, text, env, args.workspace, j.timeout_for(None))
    outcome = "success" if rc == 0 else "failure"
    print(f"== gitlab job {name} [{'ok' if rc == 0 else 'FAILED'}] exit status {rc}")
    arts = []
    if rc != 0 and job["artifacts"]["when"] == "on_failure":
        for p in job["artifacts"]["paths"]:
            arts += collect(os.path.join(args.workspace, p), os.path.join(args.artifacts, name))
        print(f"== artifacts (on_failure): {len(arts)} files copied to {args.artifacts}/{name}")
    state = {"job": name, "failed": rc != 0, "steps": [
        {"n": 1, "name": name, "id": "script", "kind": "script", "outcome": outcome,
         "seconds": round(time.monotonic() - t0, 1), "note": "", "log": log}],
        "env": {k: env[k] for k in job.get("variables", {})}, "artifacts": arts}
    with open(args.state, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    return rc and 1


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


# --- the Dockerfile's entry point, and a seccomp stand-in ---------------------------------

def cmd_dockerfile(args):
    """The entry point script, ENV and CMD of docs/ci/Dockerfile, as JSON on stdout."""
    text = open(args.file, encoding="utf-8").read()
    m = re.search(r"^COPY [^\n]*<<'(\w+)' (\S+)\n(.*?)^\1$", text, re.M | re.S)
    if not m:
        raise RecipeError("Dockerfile: no COPY <<'EOF' heredoc of the entry point")
    env = {}
    for e in re.finditer(r"^ENV ((?:.*\\\n)*.*)$", text, re.M):
        for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', e.group(1).replace("\\\n", " ")):
            env[k] = v.strip('"')
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    entry = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    if not cmd or not entry or json.loads(entry.group(1)) != [m.group(2)]:
        raise RecipeError("Dockerfile: want ENTRYPOINT [the heredoc's path] and a CMD")
    json.dump({"path": m.group(2), "script": m.group(3), "env": env,
               "cmd": json.loads(cmd.group(1))}, sys.stdout)


def cmd_deny(args):
    """Exec a command with some system calls failing EPERM, as a container runtime's
    seccomp profile answers those it does not allow (Docker's default returns EPERM)."""
    import ctypes
    import struct
    nrs = [int(x) for x in args.nrs.split(",")]
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    allow, eperm = 0x7fff0000, 0x00050000 | 1           # SECCOMP_RET_ALLOW, _ERRNO|EPERM
    ins = [(ld_w_abs, 0, 0, 4),                          # seccomp_data.arch
           (jeq_k, 1, 0, 0xc000003e),                    # AUDIT_ARCH_X86_64
           (ret_k, 0, 0, allow),
           (ld_w_abs, 0, 0, 0)]                          # seccomp_data.nr
    for nr in nrs:
        ins += [(jeq_k, 0, 1, nr), (ret_k, 0, 0, eperm)]
    ins.append((ret_k, 0, 0, allow))
    buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in ins))
    prog = struct.pack("HxxxxxxQ", len(ins), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.c_char_p(prog), 0, 0):
        raise RecipeError(f"seccomp: {os.strerror(ctypes.get_errno())}")
    os.execvp(args.argv[0], args.argv)


# --- main -----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(prog="run-recipe.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("github")
    v.add_argument("gitlab")
    v.add_argument("--require-id", action="append")
    for name in ("github", "gitlab"):
        p = sub.add_parser(name)
        p.add_argument("file")
        p.add_argument("--state", required=True)
        p.add_argument("--user", required=True)
        p.add_argument("--repo", required=True, help="the user's repository (copied)")
        p.add_argument("--workspace", required=True)
        p.add_argument("--runner-temp", required=True)
        p.add_argument("--scripts", required=True)
        p.add_argument("--logs", required=True)
        p.add_argument("--artifacts", required=True)
        p.add_argument("--var", action="append", help="NAME=VALUE of the vars context")
        p.add_argument("--prefix", default="")
        p.add_argument("--prefix-bin", default="")
        p.add_argument("--replace-ids", default="",
                       type=lambda s: set(x for x in s.split(",") if x))
        p.add_argument("--job-timeout", type=float, default=1800)
        p.add_argument("--step-timeout", type=float, default=900)
        p.add_argument("--broken", action="store_true",
                       help="plant a data bug in the copy of the repository (failure drill)")
    d = sub.add_parser("dockerfile")
    d.add_argument("file")
    n = sub.add_parser("deny")
    n.add_argument("nrs", help="system call numbers, comma-separated (x86-64)")
    n.add_argument("argv", nargs="+")
    args = ap.parse_args()
    try:
        if args.cmd == "validate":
            cmd_validate(args)
            return 0
        if args.cmd == "dockerfile":
            cmd_dockerfile(args)
            return 0
        if args.cmd == "deny":
            cmd_deny(args)
        return cmd_github(args) if args.cmd == "github" else cmd_gitlab(args)
    except RecipeError as e:
        print(f"run-recipe: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
