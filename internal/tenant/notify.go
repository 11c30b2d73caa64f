package tenant

// checkNotify checks an intent's notify roles: known roles, each once.
func checkNotify(c *problems, path string, roles []Role) {
	seen := map[Role]bool{}
	for i, r := range roles {
		p := index(path, i)
		if seen[r] {
			c.add(p, "%s is listed twice", r)
			continue
		}
		seen[r] = true
		checkRole(c, p, r)
	}
}

// checkTemplate checks a template the tenant names (templates.notify): an approved template's
// name and its language code, as templates.reengage.
func checkTemplate(c *problems, path string, t *Template) {
	if t == nil {
		return
	}
	if t.Name == "" {
		c.add(path+".name", "required: the approved template's name")
	} else if !templateNameRE.MatchString(t.Name) {
		c.add(path+".name", "must be a template name: lower-case letters, digits and _")
	}
	if t.Language == "" {
		c.add(path+".language", "required: the template's language code, such as id or en_US")
	} else if !templateLangRE.MatchString(t.Language) {
		c.add(path+".language", "must be a template language code, such as id or en_US")
	}
}
