"""What every deployment reader returns, and the tolerance they share."""

from __future__ import annotations

from dataclasses import dataclass, field

from tenure.doctor.model import Launch, Skipped


@dataclass
class ReadResult:
    launches: list[Launch] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    understood: bool = False  # the file was a deployment file of this reader's kind

    def extend(self, other: ReadResult) -> None:
        self.launches.extend(other.launches)
        self.skipped.extend(other.skipped)
        self.understood = self.understood or other.understood
