"""The figures `eebench plot` draws, by name (no imports: the CLI lists them without loading matplotlib)."""

FIGURE_KINDS = {
    "figure1": "success rate against log exploration and exploitation error, one point per model, least-squares "
               "line and R^2 (Park et al., Figure 1)",
    "prompts": "prompts compared for one model (--model, default the one with the most prompts), bars with "
               "bootstrap intervals (Park et al., Figure 5)",
    "replay": "one trajectory (--trajectory, --step, --bench for the map): its path coloured by case with its "
              "errors, the stale score, cumulative errors and case over time (Park et al., Figures 8-19)",
    "rooms-gaps": "rooms worlds: agent return, exploration gap and coverage per episode, one line per model, with "
                  "bootstrap intervals (Grams et al., Figure 2)",
}

# a name (model, prompt, room, id) longer than this is drawn shortened in the middle, in the plots and in the page
LABEL_CHARS = 32
