"""Mail: the durable outbox, its SMTP worker, email reports and traffic alerts.

To send a mail from anywhere in svc, put it in the outbox with :func:`enqueue` (one row in
the metadata store); the runtime's worker sends it when an SMTP server is configured
(``SVC_SMTP_URL``), with retries and backoff. :func:`mail_enabled` says whether it is.
"""

from __future__ import annotations

from svc.mail.outbox import Attachment, OutboxMail, enqueue, get_mail, list_mail
from svc.mail.smtp import mail_enabled

__all__ = ["Attachment", "OutboxMail", "enqueue", "get_mail", "list_mail", "mail_enabled"]
