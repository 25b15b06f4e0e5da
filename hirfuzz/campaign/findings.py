"""A campaign's findings tables: TVM's findings, the unconfirmed, the spec disagreements and
hirfuzz's own bugs, each a folder of the campaign and a table here, keyed on signatures;
the aliases a renamed finding leaves; and the lock that guards them all, and the screen,
against the reduction threads, which file what they finish here."""
from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Callable

from ..core.finding import Finding, root_keys, short_id
from ..core.violation_key import add_violation_hit, also_script_name, later_failure_key
from .also_scripts import AlsoScript, AlsoScripts
from .known import KnownFindings
from .outdir import OutDir, save_folder, write_atomic
from .reducer import PENDING, waiting_under
from .report import with_hit_by_lines
from .reproducers import FindingScripts, finding_files

if TYPE_CHECKING:
    from .cases import Case
    from .reducer import Reductions
    from .tallies import Counters

LABELS = {"findings": "finding", "unconfirmed": "unconfirmed (hirfuzz's problem, not a TVM finding)",
          "spec-disagreements": "spec disagreement"}


class FindingTables:
    """Where each finding goes, a hit of a known one or a new one to finish, and where a
    finished one is saved. A campaign's reductions file through here: `reductions` is set
    once they exist (they need these tables' methods to be made)."""

    def __init__(self, out: OutDir, seed: int, counters: "Counters", known: KnownFindings,
                 lock: threading.RLock, say: Callable[[str], None]):
        self.out, self.seed, self.counters, self.known, self.say = out, seed, counters, known, say
        self.lock = lock  # the tables, aliases and screen, shared with reduction threads
        self.reductions: "Reductions | None" = None
        self.own_bugs: dict[str, Finding] = {}
        self.findings: dict[str, Finding] = {}
        self.unconfirmed: dict[str, Finding] = {}
        self.disagreements: dict[str, Finding] = {}
        self.by_folder = {"findings": self.findings, "unconfirmed": self.unconfirmed,
                          "spec-disagreements": self.disagreements}
        self.aliases: dict[str, str] = {}  # pass-order signatures -> their minimal sequence's
        self.also_scripts: dict[str, dict[str, str]] = {}  # a pending finding's also-<op>.py files, checked
        self.also = AlsoScripts(self)  # checks them
        self.roots: dict[str, str] = {}  # root key (core.finding.root_key) -> the finding filed under it first
        # findings hit since their finding.json was last written: written with the checkpoint
        # (write_hits), not at each hit, which would cost every case that hits one a file
        self._hits_unwritten: set[str] = set()
        self.failing_later: dict[str, str] = {}  # later_failure_key -> the disruptive finding that showed it first
        # called with each confirmed finding filed in findings/ or joining one, and its case.json (text)
        self.confirmed: Callable[[Finding, str], None] = lambda finding, case_json: None

    def load(self, resumed: bool):
        """The findings an earlier run of the campaign saved, and its aliases."""
        for folder, table in {**self.by_folder, "hirfuzz-bugs": self.own_bugs}.items():
            for d in self.out.saved_findings(folder):
                table[d["signature"]] = Finding(**d)
        for finding in self.findings.values():
            joined = [key for merged in finding.extra.get("merged", []) for key in merged.get("root_keys", [])]
            for key in root_keys(finding.extra) + joined:
                self.roots.setdefault(key, finding.signature)
        for finding in (*self.findings.values(), *self.unconfirmed.values()):
            self.note_later_failure(finding)
        if resumed:
            self.aliases = self.out.saved_aliases()

    def signatures(self) -> set[str]:
        return {sig for table in self.by_folder.values() for sig in table}

    def holds(self, signature: str) -> bool:
        """Whether a finding first seen under `signature` would be a hit of one this campaign
        holds (filed, unconfirmed or pending) or of one `--known` names, not a new one."""
        with self.lock:
            signature = self.keyed_on(signature)
            return signature in self.known.signatures or self._held_under(signature)

    def _held_under(self, signature: str) -> bool:
        """Whether a finding is filed, unconfirmed or pending under `signature` (as keyed now).
        Call with the lock held."""
        pending = self.reductions.pending if self.reductions is not None else {}
        return signature in self.signatures() or waiting_under(pending, signature) is not None

    def keyed_on(self, signature: str) -> str:
        """The signature a finding first seen under `signature` is keyed on now (a pass-order
        finding is renamed to its minimal sequence's)."""
        seen = {signature}
        while signature in self.aliases and self.aliases[signature] not in seen:
            signature = self.aliases[signature]
            seen.add(signature)
        return signature

    def pending(self) -> list[Finding]:
        """The findings waiting in pending/ to be finished."""
        return [job.finding for job in self.reductions.pending.values()]

    def all_findings(self) -> list[Finding]:
        """Every finding this campaign holds, once each: saved, pending, and hirfuzz's own bugs."""
        with self.lock:
            saved = {f.signature: f for table in self.by_folder.values() for f in table.values()}
            # a pending finding already keyed on a saved one's signature was merged into it
            # (or filed as it), and its hits are there: it leaves pending/ next
            pending = [finding for finding in self.pending() if finding.signature not in saved]
            return list(saved.values()) + list(self.own_bugs.values()) + pending

    def restore_hits(self, saved: dict | None):
        """Each finding's hits as the checkpoint counted them (None: a checkpoint from before
        hirfuzz kept them, whose findings keep the hits on disk). The cases judged after the
        checkpoint run again and count their hits again; a finding first seen after it
        starts at none, and the case that found it counts it."""
        if saved is None:
            return
        findings = {self.keyed_on(f.signature): f for f in self.all_findings()}
        on_disk = {signature: f.hits for signature, f in findings.items()}
        for finding in findings.values():
            finding.hits = 0
        for signature, hits in saved.items():
            keyed_on = self.keyed_on(signature)
            if keyed_on in findings:
                findings[keyed_on].hits += hits
            else:  # renamed after the checkpoint to a finding --known names (known.hit ignores others)
                self.known.hit(keyed_on, hits)
        for signature, finding in findings.items():
            if finding.hits != on_disk[signature] and not finding.path.startswith(PENDING):
                self.rewrite_finding_json(finding)

    def hirfuzz_bug(self, case: "Case", finding: Finding):
        """A problem of hirfuzz's own (a mutator that fails or changes results): kept apart."""
        self.counters.hirfuzz_bugs += 1
        known = self.own_bugs.get(finding.signature)
        if known is not None:
            known.hits += 1
            return
        name = f"{len(self.own_bugs) + 1:04d}-{finding.kind}-{short_id(finding.signature)}"
        finding.path = f"hirfuzz-bugs/{name}"  # relative to the campaign folder, as every path it writes
        case_json = {"case": case.index, "seed": self.seed, "graph": case.graph.to_json(),
                     "lowering": case.lowering, "configs": case.configs}
        save_folder(self.out / "hirfuzz-bugs", name, finding_files(finding, case_json, "", None, finding.detail))
        self.own_bugs[finding.signature] = finding
        self.say(f"hirfuzz's own bug (not reported as a TVM finding) {name}: {finding.message[:160]}")

    def file_found(self, case: "Case", finding: Finding, log: str):
        """What the oracles found, where it belongs: TVM's findings, a spec's disagreement, or
        hirfuzz's own bug. A reduction thread files what it meets besides its own finding."""
        with self.lock:
            if finding.kind == "mutant-disagreement":
                self.hirfuzz_bug(case, finding)
            elif finding.kind == "spec-disagreement":
                self.counters.spec_disagreements += 1
                self.keep("spec-disagreements", case, finding, log)
            else:
                self.counters.findings_hits += 1
                self.record(case, finding, log)

    def record(self, case: "Case", finding: Finding, log: str):
        """A finding of the oracles: a hit of one already known, or a new one to finish."""
        with self.lock:
            finding.signature = self.joined_by_later_failure(finding)
            for table in (self.findings, self.unconfirmed):
                known = table.get(finding.signature)
                if known is not None:
                    self.hit(known, case, finding)
                    if table is self.findings:
                        self._hits_unwritten.add(known.signature)
                    return
            self.keep("findings", case, finding, log)

    def joined_by_later_failure(self, finding: Finding) -> str:
        """The signature `finding` is kept under: its own (after any rename), or, for a
        disruptive finding past type inference new to the campaign, that of the one whose
        ops failed later at the same check in TVM first (core.violation_key.later_failure_key):
        two inference functions without one check whose ops trip over one later check are
        one missing check. Call with the lock held."""
        signature = self.keyed_on(finding.signature)
        first = self.note_later_failure(finding, signature)
        if first is None:
            return signature
        return signature if self._held_under(signature) else first

    def note_later_failure(self, finding: Finding, signature: str | None = None) -> str | None:
        """Remember where a disruptive finding past type inference failed later, unless a
        finding showed that failure first; returns the signature of the one that did (None:
        no such failure). Call with the lock held."""
        key = later_failure_key(finding)
        return None if key is None else self.failing_later.setdefault(key, signature or finding.signature)

    def keep(self, folder: str, case: "Case", finding: Finding, log: str):
        """Count a hit of a finding on its way to `folder`, or queue a new one for reduction."""
        with self.lock:
            waiting = waiting_under(self.reductions.pending, finding.signature)
            known = self.by_folder[folder].get(finding.signature) or (waiting.finding if waiting else None)
            if known is not None:
                self.hit(known, case, finding)
                return
            if self.known.hit(finding.signature):
                return  # an earlier campaign's: counted, never reduced or filed again
            self.reductions.submit(folder, case, finding, log)
            self.say(f"new {finding.kind} (case {case.index}): {finding.message[:160]}\n"
                     f"    reducing and checking its reproducer; kept meanwhile in {PENDING}/")

    def hit(self, known: Finding, case: "Case", finding: Finding):
        """Count a hit of a known finding; a disruptive one lists the hit's op and dtype, and
        keeps a short script of an op new to it beside its first once that script fails
        alone as the hit did (also_scripts.py)."""
        known.hits += 1
        if not add_violation_hit(known, finding) or self.reductions is None:
            return
        host = self.reductions.host_of(finding)
        scripts = FindingScripts(host.info, host.specs, host.settings, host.tvm_version, module_script=None)
        text = scripts.violation_scripts(case, finding)[0][1]
        self.also.submit(AlsoScript(known, finding, also_script_name(finding.extra["violation"]["op"]), text, host))

    def rename_finding(self, finding: Finding, signature: str) -> bool:
        """Key `finding` on `signature` from now on (a pass-order finding on its minimal
        sequence), later hits of its first signature too. Returns whether a finding is
        already saved, or known (--known), under `signature`: the renamed one's hits are
        then added to it, and it is not filed."""
        with self.lock:
            self.aliases[finding.signature] = signature
            self.out.save_aliases(self.aliases)
            finding.signature = signature
            saved = self.findings.get(signature) or self.unconfirmed.get(signature)
            if saved is not None:
                saved.hits += finding.hits
                self.rewrite_finding_json(saved)
                return True
            if not self.known.hit(signature, finding.hits):
                return False
            # it was said to be new when first seen, under the signature it had then
            self.say(f"the {finding.kind} of case {finding.case} is a known finding (--known): counted, not filed")
            return True

    def join_root(self, finding: Finding, first_seen: str, files: dict) -> bool:
        """File a confirmed finding as a hit of the one first filed with one of its root keys
        (core.finding.root_keys: its root key, then its lone-operator key), if any: that one
        keeps its folder and number, both signatures this one had become its aliases (later
        hits go there, after a resume too), its hits grow by this one's, its keys become the
        earlier one's too, and its files are kept in its folder under merged/. A root key an earlier campaign's finding had (--known) is counted
        as that known finding's. Returns whether it joined one; where not, the finding is
        the first with its root key, filed as any."""
        with self.lock:
            keys = root_keys(finding.extra)
            key = next((k for k in keys if self.roots.get(k) in self.findings), None)
            earlier = self.findings[self.roots[key]] if key is not None else None
            key = key or next((k for k in keys if k in self.known.signatures), None)
            if key is not None and earlier is None and self.known.hit(key, finding.hits):
                # an earlier campaign's root cause (--known): counted, later hits of it too
                for signature in {first_seen, finding.signature}:
                    self.aliases[signature] = key
                self.out.save_aliases(self.aliases)
                self.say(f"the {finding.kind} of case {finding.case} has the root cause of a known finding "
                         "(--known): counted, not filed")
                finding.path = f"--known root cause {key[:80]}"
                self.confirmed(finding, files.get("case.json", ""))  # its construct is avoided too
                return True
            if key is None or earlier is None or earlier.signature == finding.signature:
                return False
            for signature in {first_seen, finding.signature}:
                self.aliases[signature] = earlier.signature
            self.out.save_aliases(self.aliases)
            name = f"{finding.kind}-{short_id(finding.signature)}"
            files["finding.json"] = json.dumps(finding.to_json(), indent=2) + "\n"
            save_folder(self.out / earlier.path / "merged", name, files)
            earlier.hits += finding.hits
            earlier.extra.setdefault("merged", []).append(
                {"signature": finding.signature, "case": finding.case, "hits": finding.hits,
                 "path": f"{earlier.path}/merged/{name}", "root_keys": keys})
            for also in keys:  # a later finding with this one's other key joins there too
                self.roots.setdefault(also, earlier.signature)
            self.rewrite_finding_json(earlier)
            finding.path = f"{earlier.path}/merged/{name}"
            self.confirmed(finding, files.get("case.json", ""))  # another construct of that cause: avoided too
            self.say(f"the {finding.kind} of case {finding.case} has the root cause of {earlier.path} "
                     f"(where TVM fails: {key[:120]}): counted there, its files in merged/{name}")
            return True

    def file_finding(self, folder: str, finding: Finding, files: dict):
        """A finished finding: saved in `folder` under the next number, listed, said."""
        with self.lock:
            table = self.by_folder[folder]
            name = f"{len(table) + 1:04d}-{finding.kind}-{short_id(finding.signature)}"
            finding.path = f"{folder}/{name}"  # relative to the campaign folder, as every path it writes
            files.update(self.also_scripts.pop(finding.signature, {}))
            if "bug-report.md" in files:  # hits met since the report was written list their ops too
                files["bug-report.md"] = with_hit_by_lines(files["bug-report.md"], finding.to_json())
            files["finding.json"] = json.dumps(finding.to_json(), indent=2) + "\n"
            save_folder(self.out / folder, name, files)
            table[finding.signature] = finding
            self.note_later_failure(finding)
            for key in root_keys(finding.extra) if folder == "findings" else []:
                self.roots.setdefault(key, finding.signature)
            if folder == "unconfirmed":
                self.counters.unconfirmed += 1
            if folder == "findings" and finding.confirmed:
                self.confirmed(finding, files.get("case.json", ""))
            why = f"\n    {finding.extra['unconfirmed_reason']}" if folder == "unconfirmed" else ""
            self.say(f"{LABELS[folder]} {name}: {finding.message[:200]}{why}\n    -> {self.out / finding.path}/repro.py")

    def write_hits(self):
        """finding.json of each finding hit since it was last written, with its hits now."""
        with self.lock:
            hit, self._hits_unwritten = self._hits_unwritten, set()
            for signature in sorted(hit):
                finding = self.findings.get(signature)
                if finding is not None:
                    self.rewrite_finding_json(finding)

    def rewrite_finding_json(self, finding: Finding):
        folder = self.out / finding.path
        if finding.path and folder.is_dir():  # Path("") is the campaign folder itself
            write_atomic(folder / "finding.json", json.dumps(finding.to_json(), indent=2) + "\n")
