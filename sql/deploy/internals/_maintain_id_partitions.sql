-- Deploy pgflight:internals/_maintain_id_partitions

begin;

set local role pgflight_owner;

-- Steps 4 and 5 of maintain_partitions for one family of tables partitioned alike by the id of
-- pgflight.<p_ids> (p_tables[1] gives the bounds; traces and costs by agent_runs.id, streams and
-- stream_chunks by runs.id; each table's id column is agent_run_id / run_id):
--   4. partitions [lo, lo + p_width) are created (every table at once, filled from its default
--      partition) until half a partition or more lies ahead of the next id; a partition whose ids
--      have all been drawn and in which no row of pgflight.<p_ids> is left (purge_finished purged
--      them) is dropped, checked again under an ACCESS EXCLUSIVE lock on the tables so an id that
--      committed meanwhile keeps it;
--   5. rows of the default partitions whose id is gone are deleted, at most p_limit per table
--      (null: no limit).
CREATE OR REPLACE FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) RETURNS TABLE(partition_name text, action text, moved_rows bigint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_col text := case p_ids when 'agent_runs' then 'agent_run_id' else 'run_id' end;
  v_next bigint;
  v_to bigint;
  v_from bigint;
  v_table text;
  v_name text;
  v_rows bigint;
  v_left boolean;
  v_moved bigint[] := '{}';
  i integer;
begin
  execute format('select case when q.is_called then q.last_value + 1 else q.last_value end from pgflight.%I q',
                 p_ids || '_id_seq') into v_next;
  for i in 1 .. 10 loop  -- a few per call: a jump past them lands in the default partitions meanwhile
    select coalesce(max(b.hi), 0) into v_to from pgflight._id_partitions(p_tables[1]) b;
    -- ids far past the last partition (a cell's ids start at its cell number << 44,
    -- docs/scaling.md): the next partition starts at the width-aligned floor of the next id
    if v_next - v_to > p_width then
      v_to := v_next - v_next % p_width;
    end if;
    exit when v_to - v_next >= p_width / 2;  -- half a partition or more ahead
    begin
      perform set_config('lock_timeout', '200ms', true);
      foreach v_table in array p_tables loop
        v_name := v_table || '_from_' || v_to;
        -- no insert lands in the default partition between the move and the attach
        execute format('lock table pgflight.%I in exclusive mode', v_table || '_default');
        execute format('create table pgflight.%I (like pgflight.%I including defaults including constraints)',
                       v_name, v_table);
        execute format('with m as (delete from pgflight.%I d where d.%I >= %s and d.%I < %s '
                       'returning d.*) insert into pgflight.%I select * from m',
                       v_table || '_default', v_col, v_to, v_col, v_to + p_width, v_name);
        get diagnostics v_rows = row_count;
        execute format('alter table pgflight.%I attach partition pgflight.%I for values from (%s) to (%s)',
                       v_table, v_name, v_to, v_to + p_width);
        v_moved := v_moved || v_rows;
      end loop;
    exception when lock_not_available or duplicate_table then
      exit;  -- the next call creates it (or a concurrent call just did)
    end;
    return query select t || '_from_' || v_to, 'created'::text, m from unnest(p_tables, v_moved) x(t, m);
    v_moved := '{}';
  end loop;
  for v_from, v_to in select b.lo, b.hi from pgflight._id_partitions(p_tables[1]) b where b.hi <= v_next order by b.lo loop
    execute format('select exists (select from pgflight.%I a where a.id >= %s and a.id < %s)', p_ids, v_from, v_to)
      into v_left;
    continue when v_left;
    begin
      perform set_config('lock_timeout', '200ms', true);
      execute format('lock table %s in access exclusive mode',
                     (select string_agg(format('pgflight.%I', t), ', ') from unnest(p_tables) t));
      execute format('select exists (select from pgflight.%I a where a.id >= %s and a.id < %s)', p_ids, v_from, v_to)
        into v_left;
      continue when v_left;
      foreach v_table in array p_tables loop
        v_name := v_table || '_from_' || v_from;
        if to_regclass('pgflight.' || v_name) is not null then
          execute format('drop table pgflight.%I', v_name);
          return query select v_name, 'dropped'::text, null::bigint;
        end if;
      end loop;
    exception when lock_not_available then
      null;  -- the next call drops it
    end;
  end loop;

  foreach v_table in array p_tables loop
    execute format('delete from pgflight.%1$I t where t.ctid = any (array(select d.ctid from pgflight.%1$I d '
                   'where not exists (select from pgflight.%3$I a where a.id = d.%4$I) limit %2$s))',
                   v_table || '_default', coalesce(p_limit::text, 'all'), p_ids, v_col);  -- null: no row limit
    get diagnostics v_rows = row_count;
    if v_rows > 0 then
      return query select v_table || '_default', 'purged'::text, v_rows;
    end if;
  end loop;
end
$_$;

COMMENT ON FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) IS 'Internal: create ahead / drop when purged the id-range partitions of a family of tables, purge at most p_limit stray rows of their default partitions (maintain_partitions steps 4 and 5).';

REVOKE ALL ON FUNCTION pgflight._maintain_id_partitions(p_tables text[], p_ids text, p_width bigint, p_limit integer) FROM PUBLIC;

commit;
