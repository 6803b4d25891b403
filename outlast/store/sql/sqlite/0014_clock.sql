-- The database's clock, defined once: now as unix seconds (julianday's millisecond
-- precision), what every time column holds. Queries read it as (SELECT now FROM
-- outlast_clock); within one statement 'now' is one instant, through the view or not.
-- (SQLite 3.42's unixepoch('subsec') would say it shorter; Python 3.11 bundles 3.40.)
CREATE VIEW outlast_clock AS SELECT (julianday('now') - 2440587.5) * 86400.0 AS now;
