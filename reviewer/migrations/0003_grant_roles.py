"""Roles move from global groups to each project grant.

Until now a person's role was a Django group (``viewer``, ``reviewer``,
``steward``) that held in every project they were granted. Each existing
grant now carries that role itself: the highest of those groups the person
is in, so everyone keeps exactly the access they had. A grant whose person
is in none of the groups opened nothing before (``access.role_of`` answered
None), so it is removed rather than turned into access nobody gave.

The groups are left in place and no longer read. Reversing copies each
person's highest grant role back into the groups.
"""

from django.db import migrations, models

ROLES = ("viewer", "reviewer", "steward")


def grants_take_the_group_role(apps, schema_editor):
    grant_model = apps.get_model("reviewer", "ProjectGrant")
    for grant in grant_model.objects.select_related("user"):
        names = set(grant.user.groups.values_list("name", flat=True))
        held = [r for r in ROLES if r in names]
        if held:
            grant.role = held[-1]
            grant.save(update_fields=["role"])
        else:
            grant.delete()


def groups_take_the_highest_grant_role(apps, schema_editor):
    grant_model = apps.get_model("reviewer", "ProjectGrant")
    group_model = apps.get_model("auth", "Group")
    highest = {}
    for grant in grant_model.objects.select_related("user"):
        user, role = highest.get(grant.user_id, (grant.user, grant.role))
        highest[grant.user_id] = (user, max(role, grant.role, key=ROLES.index))
    for user, role in highest.values():
        user.groups.add(group_model.objects.get_or_create(name=role)[0])


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("reviewer", "0002_api_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="projectgrant",
            name="role",
            field=models.CharField(
                choices=[("viewer", "viewer"), ("reviewer", "reviewer"), ("steward", "steward")],
                default="viewer",
                max_length=20,
            ),
        ),
        migrations.RunPython(grants_take_the_group_role, groups_take_the_highest_grant_role),
    ]
