-- price_usd: usage x the model's prices (USD per million tokens); a dated model id uses its
-- longest matching prefix; the offline model is free; an unknown model is 22023.
begin;
\ir ../_helpers.psql
select plan(4);

select is(pgflight.price_usd('claude-haiku-4-5', '{"input_tokens": 1000000, "output_tokens": 100000}'),
          1.5::numeric, 'haiku 4.5: 1 M input at 1 USD + 100 k output at 5 USD per million');
select is(pgflight.price_usd('claude-haiku-4-5-20251001', '{"input_tokens": 1000000, "output_tokens": 100000}'),
          1.5::numeric, 'a dated model id is priced by its prefix');
select is(pgflight.price_usd('offline', '{"input_tokens": 123456, "output_tokens": 654321}'),
          0::numeric, 'the offline model costs nothing');
select throws_ok($$select pgflight.price_usd('no-such-model', '{"input_tokens": 1}')$$, '22023', null,
                 'an unknown model has no price');

select * from finish();
rollback;
