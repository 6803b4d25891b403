-- What the supervisor remembers about a run between its attempts (tranches it granted,
-- the state fingerprint at the last budget checkpoint, a note for the next attempt).
-- Kept out of `usage`, which the snapshot shows as the run's budget usage; earlier
-- versions kept it there, so it moves.
ALTER TABLE outlast_runs ADD COLUMN supervision jsonb;
UPDATE outlast_runs
SET supervision = jsonb_strip_nulls(jsonb_build_object(
        'checkpoint_state', usage -> 'checkpoint_state',
        'auto_tranches', usage -> 'auto_tranches',
        'strategy_changed', usage -> 'strategy_changed',
        'note', usage -> 'supervisor_note',
        'reminders', usage -> 'reminders')),
    usage = usage - 'checkpoint_state' - 'auto_tranches' - 'strategy_changed'
        - 'supervisor_note' - 'reminders'
WHERE usage ?| ARRAY['checkpoint_state', 'auto_tranches', 'strategy_changed',
                     'supervisor_note', 'reminders'];
