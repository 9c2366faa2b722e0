from sqlalchemy import Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Visit(Base):
    __tablename__ = "portal_visits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    patient_id: Mapped[int] = mapped_column(Integer, index=True)
    summary: Mapped[str] = mapped_column(String(500))

    def as_dict(self):
        return {"id": self.id, "patient": self.patient_id, "summary": self.summary}
