"""Triage: a log read against the catalog's signatures and evidence (`kb match`), and the request
for a new cell written from a log no cell matches. Never imports the page renderer."""
