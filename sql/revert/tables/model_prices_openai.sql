-- Revert pgflight:tables/model_prices_openai
begin;
set local role pgflight_owner;

delete from pgflight.model_prices
 where model in ('gpt-4.1', 'gpt-4.1-mini', 'gpt-4o', 'gpt-4o-mini')
   and source = 'https://platform.openai.com/docs/pricing';

commit;
