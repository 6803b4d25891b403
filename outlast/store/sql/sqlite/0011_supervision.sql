-- What the supervisor remembers about a run between its attempts; kept out of `usage`
-- (see the Postgres migration), so what earlier versions kept there moves.
ALTER TABLE outlast_runs ADD COLUMN supervision TEXT;
UPDATE outlast_runs
SET supervision = json_patch('{}', json_object(
        'checkpoint_state', json_extract(usage, '$.checkpoint_state'),
        'auto_tranches', json_extract(usage, '$.auto_tranches'),
        'strategy_changed', json(CASE WHEN json_extract(usage, '$.strategy_changed')
                                      THEN 'true' ELSE 'null' END),
        'note', json_extract(usage, '$.supervisor_note'),
        'reminders', json_extract(usage, '$.reminders'))),
    usage = json_remove(usage, '$.checkpoint_state', '$.auto_tranches',
                        '$.strategy_changed', '$.supervisor_note', '$.reminders')
WHERE usage IS NOT NULL AND (
    json_extract(usage, '$.checkpoint_state') IS NOT NULL
    OR json_extract(usage, '$.auto_tranches') IS NOT NULL
    OR json_extract(usage, '$.strategy_changed') IS NOT NULL
    OR json_extract(usage, '$.supervisor_note') IS NOT NULL
    OR json_extract(usage, '$.reminders') IS NOT NULL);
