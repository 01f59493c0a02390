"""What already holds against a hostile client, kept so: CSRF on every state-changing
form, no open redirect after login, unknown Host headers refused."""

from __future__ import annotations

import pytest
from django.test import Client

from webui.control.models import HostRule

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(django_user_model):
    django_user_model.objects.create_superuser("boss", "boss@example.test", "right-pass-9")
    client = Client(enforce_csrf_checks=True)
    client.login(username="boss", password="right-pass-9")
    return client


def test_state_changes_without_a_csrf_token_are_refused(staff):
    added = staff.post("/admin/control/hostrule/add/", {"pattern": "evil.test", "block": "on"})
    assert added.status_code == 403
    assert not HostRule.objects.filter(pattern="evil.test").exists()
    assert staff.post("/dashboard/recrawl", {"url": "http://evil.test/"}).status_code == 403
    assert staff.post("/admin/logout/").status_code == 403


@pytest.mark.parametrize("target", ["http://evil.test/", "//evil.test/", "https:evil.test",
                                    "/\\evil.test", "\\\\evil.test"])
def test_login_does_not_redirect_off_site(client, django_user_model, target):
    django_user_model.objects.create_superuser("boss", "boss@example.test", "right-pass-9")
    response = client.post(f"/admin/login/?next={target}",
                           {"username": "boss", "password": "right-pass-9", "next": target})
    assert response.status_code == 302
    assert response["Location"].startswith("/") and not response["Location"].startswith("//")
    assert "evil" not in response["Location"]


def test_unknown_host_headers_are_refused(client):
    assert client.get("/", HTTP_HOST="evil.test").status_code == 400
    assert client.get("/api/search", {"q": "x"}, HTTP_HOST="evil.test").status_code == 400
