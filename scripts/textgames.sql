/* The README's "Coverage on real text-game logs" table: per game and agent, episodes, ECC, exploration degree, states. */
SELECT CASE WHEN instance_id LIKE 'textworld/%' THEN split_part(instance_id, '/', 2)
            ELSE split_part(instance_id, '/', 1) END AS game,
       coalesce(model, agent_name) AS model, prompt,
       count(*) AS episodes, sum(n_steps) AS steps, max(checkpoints_total) AS checkpoints,
       round(avg(ecc), 3) AS mean_ecc,
       round(avg(exploration_degree), 3) AS exploration_degree,
       round(avg(distinct_states), 1) AS distinct_states
FROM trajectories
GROUP BY ALL
ORDER BY game, model, prompt
