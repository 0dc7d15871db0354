"""The dashboard's pages, one module per page family.

Every view checks the person's access to the project (another project answers
404) and, for actions, their role (403). Services are built per request with
``agent_id`` set to the username, so the core records who acted. Actions are
POST forms with a request id; with htmx the card acted on and the page's
counters are replaced in place, without JavaScript the same form redirects.
A view does HTTP; what a page shows is read from the core.
"""
