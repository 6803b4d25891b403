"""The pure parts of push notifications: the secret box, the URL rules, the backoff, and
the signature a receiver checks with the ``standardwebhooks`` package."""

from __future__ import annotations

import datetime as dt
import random
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from outlast.config import Settings
from outlast.runtime.deliverer import retry_policy
from outlast.secretbox import SecretBox, SecretUnreadable
from outlast.webhooks import sender
from outlast.webhooks.urls import UnsafeUrl, check_url, resolve


def test_a_sealed_secret_opens_only_with_its_key_and_survives_rotation() -> None:
    old, new = Fernet.generate_key(), Fernet.generate_key()
    sealed = SecretBox([old]).seal("whsec_abc")
    assert "whsec_abc" not in sealed and "abc" not in sealed
    assert SecretBox([new, old]).open(sealed) == "whsec_abc"  # rotated: new first
    with pytest.raises(SecretUnreadable, match="not configured"):
        SecretBox([new]).open(sealed)


def test_without_keys_one_is_made_once_in_the_data_dir_readable_by_its_owner_only(
    tmp_path: Path,
) -> None:
    first = SecretBox.from_settings(Settings(data_dir=tmp_path))
    sealed = first.seal("s")
    key = tmp_path / "secret.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    made = key.read_bytes()
    again = SecretBox([made])  # what another process on this folder reads
    assert again.open(sealed) == "s" and key.read_bytes() == made


def test_configured_keys_win_and_bad_ones_say_what_is_expected(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    box = SecretBox.from_settings(Settings(data_dir=tmp_path, secret_keys=SecretStr(key)))
    assert SecretBox([key.encode()]).open(box.seal("x")) == "x"
    assert not (tmp_path / "secret.key").exists()
    with pytest.raises(ValueError, match="Fernet keys"):
        SecretBox.from_settings(Settings(data_dir=tmp_path, secret_keys=SecretStr("nope")))


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://example.com/", "http needs OUTLAST_WEBHOOK_ALLOW_PRIVATE"),
        ("https://127.0.0.1/", "loopback"),
        ("https://192.168.1.4:8443/x", "private"),
        ("https://169.254.169.254/latest/meta-data", "private"),  # link-local: the cloud's
        ("https://[::ffff:10.0.0.1]/", "private"),  # an IPv4-mapped IPv6 address
        ("https://[fd00::1]/", "private"),
        ("https://0.0.0.0/", "not an address"),
        ("https://224.0.0.1/", "not an address"),
        ("https://user:pw@example.com/", "credentials"),
        ("https:///nohost", "no host"),
        ("https://example.com:99999/", "not a URL"),
        ("https://" + "a" * 2100 + ".com/", "longer than"),
        ("https://exa\x00mple.com/", "printable ASCII"),  # Postgres text cannot hold NUL
        ("https://exámple.com/", "printable ASCII"),
        ("https://example.com/a b", "printable ASCII"),
    ],
)
def test_urls_outlast_will_not_send_to(url: str, says: str) -> None:
    with pytest.raises(UnsafeUrl, match=says):
        check_url(url, allow_private=False)


def test_the_operator_may_allow_private_addresses_and_http() -> None:
    for url in ("http://127.0.0.1:9/h", "https://10.0.0.1/", "http://[::1]:80/"):
        assert check_url(url, allow_private=True) == url
    with pytest.raises(UnsafeUrl):
        check_url("https://0.0.0.0/", allow_private=True)  # never a destination


async def test_the_request_goes_to_the_address_that_was_checked() -> None:
    target = await resolve("http://localhost:8123/in?x=1", allow_private=True)
    assert target.url in ("http://127.0.0.1:8123/in?x=1", "http://[::1]:8123/in?x=1")
    assert target.host == "localhost:8123" and target.sni is None
    pinned = await resolve("https://93.184.216.34/p", allow_private=False)
    assert pinned.url == "https://93.184.216.34/p" and pinned.sni == "93.184.216.34"
    with pytest.raises(UnsafeUrl, match="loopback"):
        await resolve("https://localhost/", allow_private=False)


def test_backoff_doubles_up_to_its_cap_with_half_of_it_random() -> None:
    rng = random.Random(7)
    policy = retry_policy(Settings(webhook_backoff=2.0, webhook_backoff_max=60.0))
    for attempt, full in ((1, 2.0), (2, 4.0), (3, 8.0), (10, 60.0), (40, 60.0)):
        delays = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(full / 2 <= d <= full for d in delays)
        assert max(delays) - min(delays) > full / 4  # jittered, not one instant for all


def test_a_receiver_verifies_the_signature_with_standardwebhooks() -> None:
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"type":"run.completed","data":{}}'
    headers = sender.headers_for("d-1", body, secret)
    assert Webhook(secret).verify(body, headers) == {"type": "run.completed", "data": {}}
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body + b" ", headers)  # the body changed
    old = sender.headers_for("d-1", body, secret, dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(secret).verify(body, old)  # a replay of an old attempt
    unsigned = sender.headers_for("d-1", body, None)
    assert "webhook-signature" not in unsigned and unsigned["webhook-id"] == "d-1"
