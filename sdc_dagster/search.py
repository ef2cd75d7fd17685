SEARCHED_PLAN = "searched"
