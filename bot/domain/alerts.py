"""The Alertmanager webhook (version 4) as Alertmanager 0.25 sends it, and the identity of a notification.

Validation policy: every field proxybot reads is checked strictly (labels and annotations are string to
string, timestamps carry a zone, `truncatedAlerts` is a JSON integer, `version` must be "4"), so a bad body
is refused with the path of the bad field (`alerts[3].labels.severity: ...`). Fields Alertmanager may add
in a later version are ignored rather than refused: refusing them would turn an Alertmanager upgrade into
lost alerts, and the raw body is kept by the store anyway, so nothing is thrown away.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictInt,
    StrictStr,
    ValidationError,
)

from bot.errors import InputError

WEBHOOK_VERSION = "4"
# Go's zero time.Time, which Alertmanager writes as `endsAt` of an alert that is still firing.
GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
_SHOWN_PROBLEMS = 5


class AlertStatus(StrEnum):
    """Whether an alert (or a whole notification) is firing or resolved."""

    FIRING = "firing"
    RESOLVED = "resolved"


def _end_time(value: Any) -> Any:
    # A validator before the type makes pydantic judge the value as Python data, where strict mode
    # would refuse every string: the "strings only" rule is therefore checked here.
    if value is not None and not isinstance(value, str | datetime):
        raise ValueError("Input should be an RFC 3339 time string")
    if value == "0001-01-01T00:00:00Z" or value == GO_ZERO_TIME:
        return None
    return value


LabelSet = dict[StrictStr, StrictStr]
# Strict: an RFC 3339 string with a zone, as Alertmanager writes; a bare number is not a timestamp here.
Instant = Annotated[AwareDatetime, Strict()]
EndTime = Annotated[AwareDatetime | None, BeforeValidator(_end_time)]


class _WebhookModel(BaseModel):
    """Base of the webhook models: immutable, unknown fields ignored (see the module docstring)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class Alert(_WebhookModel):
    """One alert of a notification; `ends_at` is None while it fires."""

    status: AlertStatus
    labels: LabelSet
    annotations: LabelSet = Field(default_factory=dict)
    starts_at: Instant = Field(alias="startsAt")
    ends_at: EndTime = Field(default=None, alias="endsAt")
    generator_url: StrictStr = Field(default="", alias="generatorURL")
    fingerprint: StrictStr = Field(min_length=1)

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", "")

    @property
    def firing(self) -> bool:
        return self.status is AlertStatus.FIRING


class AlertmanagerWebhook(_WebhookModel):
    """One notification of an Alertmanager alert group (webhook payload version 4)."""

    version: Literal["4"]
    group_key: StrictStr = Field(alias="groupKey", min_length=1)
    status: AlertStatus
    receiver: StrictStr = ""
    alerts: list[Alert] = Field(min_length=1)
    group_labels: LabelSet = Field(default_factory=dict, alias="groupLabels")
    common_labels: LabelSet = Field(default_factory=dict, alias="commonLabels")
    common_annotations: LabelSet = Field(default_factory=dict, alias="commonAnnotations")
    external_url: StrictStr = Field(default="", alias="externalURL")
    truncated_alerts: StrictInt = Field(default=0, ge=0, alias="truncatedAlerts")

    def firing(self) -> list[Alert]:
        return [alert for alert in self.alerts if alert.firing]

    def resolved(self) -> list[Alert]:
        return [alert for alert in self.alerts if not alert.firing]

    def identity(self) -> str:
        """What makes two deliveries the same notification, as a hex digest.

        Alertmanager retries resend the same body, and HA peers each deliver the group with the same
        groupKey and alert fingerprints but their own `receiver` name and `externalURL`, in any alert
        order. So the identity is the group, its status, the truncation count and the sorted alert
        states; labels and annotations are left out because the fingerprint already stands for the
        labels, and annotation text may be re-templated without the alert changing.
        """
        alerts = sorted(
            (alert.fingerprint, alert.status.value, _instant(alert.starts_at), _instant(alert.ends_at))
            for alert in self.alerts
        )
        canonical = [self.group_key, self.status.value, self.truncated_alerts, alerts]
        encoded = json.dumps(canonical, separators=(",", ":"), ensure_ascii=True).encode()
        return hashlib.sha256(encoded).hexdigest()


def _instant(moment: datetime | None) -> str:
    # Normalised to UTC so the same instant written with another offset is still the same alert state.
    return "" if moment is None else moment.astimezone(UTC).isoformat()


def parse_webhook(raw: bytes | str) -> AlertmanagerWebhook:
    """Validate a webhook body; raises InputError naming each bad field (`alerts[0].startsAt: ...`)."""
    try:
        return AlertmanagerWebhook.model_validate_json(raw)
    except ValidationError as error:
        raise InputError(describe_validation_error(error)) from None


def describe_validation_error(error: ValidationError) -> str:
    """`path: message` for the first few problems, without echoing the offending input."""
    problems = [f"{_field_path(item['loc'])}: {_message(item)}" for item in error.errors()]
    shown = "; ".join(problems[:_SHOWN_PROBLEMS])
    hidden = len(problems) - _SHOWN_PROBLEMS
    return shown + (f"; and {hidden} more" if hidden > 0 else "")


def _message(item: Any) -> str:
    if item["type"] == "literal_error" and tuple(item["loc"]) == ("version",):
        return f"expected {WEBHOOK_VERSION!r} (Alertmanager webhook version 4)"
    return str(item["msg"])


def _field_path(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return "body"
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path
