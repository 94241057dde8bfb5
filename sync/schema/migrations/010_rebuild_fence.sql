-- 010_rebuild_fence: a rebuild reads Postgres only after every write of
-- entries read from the Redis before it has ended (sync/fence). The sync
-- worker's write transaction starts with ticketd_fence(prefix, epoch), the
-- epoch it knew before it read its entries from Redis: it takes the prefix's
-- fence lock shared and aborts (SQLSTATE TF001) when a rebuild has raised the
-- epoch since. A rebuild raises the epoch under the same lock taken
-- exclusively, so it waits for the writes in flight, and a write whose
-- entries came from the lost Redis cannot land after its snapshot.
CREATE TABLE rebuild_fences (
    key_prefix text PRIMARY KEY,
    epoch      bigint NOT NULL
);

CREATE FUNCTION ticketd_fence(prefix text, seen bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1952870499, hashtext(prefix));
    IF coalesce((SELECT epoch FROM rebuild_fences WHERE key_prefix = prefix), 0) <> seen THEN
        RAISE EXCEPTION 'a rebuild of the Redis state began after these entries were read'
            USING ERRCODE = 'TF001';
    END IF;
END
$$;
